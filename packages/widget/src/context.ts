/** What every part of a mounted widget works with, once its language is known (`ui.ts` makes it). */
import type { ClientError, EndpointId, ThinClient } from "@hearken/api/thin"
import type { Emitter } from "./emitter.js"
import type { Language, Translate } from "./i18n.js"
import type { MountOptions, Suggestion } from "./options.js"

export interface Context extends Emitter {
  /** Whether the widget is still mounted: false once it is destroyed. */
  readonly live: () => boolean
  readonly client: ThinClient
  readonly options: MountOptions
  readonly language: Language
  readonly t: Translate
  /** The server writes its messages in English: shown as they are only in an English widget. */
  readonly english: boolean
  /** The id of the widget's element `name`, unique in the document (two widgets may share a page). */
  readonly id: (name: string) => string
  /**
   * Says `what` in the widget's alert, which concerns the whole widget: a
   * sentence, or an error as the visitor reads it (`describe`); "" clears it.
   */
  readonly alert: (what: string | ClientError<EndpointId>) => void
  /** The link to a post (`postUrl`), if the host gave one. */
  readonly linkFor: (post: Suggestion) => string | undefined
}
