/**
 * What a host page gives the widget and hears from it: the same options and
 * events whether it embeds the frame (`embed.js`) or the widget itself
 * (`widget.js`), and what the rendering code (`ui.ts`) is given.
 */
import type { ClientError, EndpointId, Success } from "@hearken/api/thin"
import type { MessageOverrides } from "./i18n.js"
import type { Theme } from "./theme.js"

export type Board = Success<"boards">[number]
export type Update = Success<"updates">[number]
export type Suggestion = Success<"suggestions">[number]

/** What the widget tells the host. None carries what the visitor typed. */
export interface WidgetEvents {
  /** Rendered, in its language. */
  readonly "hearken:ready": { readonly locale: string; readonly dir: "ltr" | "rtl"; readonly theme: Theme }
  /** An answer to the draft was shown: `count` similar posts (0: none similar). */
  readonly "hearken:suggestions": {
    readonly count: number
    readonly boardId: string
    readonly posts: ReadonlyArray<{ readonly id: string; readonly slug: string }>
  }
  /** The visitor opened a suggested post (its link, with `postUrl`). */
  readonly "hearken:suggestion-selected": { readonly id: string; readonly slug: string; readonly url: string }
  /** A post was created. */
  readonly "hearken:submitted": { readonly id: string; readonly slug: string; readonly boardId: string }
  /** A call to the API failed; `operation` is the endpoint (`boards`, `updates`, `suggestions`, `feedback`). */
  readonly "hearken:error": { readonly _tag: ClientError<EndpointId>["_tag"]; readonly operation: EndpointId }
  /** `mode: "launcher"`: the widget was opened. */
  readonly "hearken:open": Record<string, never>
  /** `mode: "launcher"`: the widget was closed (Escape, a click outside, or the button). */
  readonly "hearken:close": Record<string, never>
}
export type WidgetEvent = { readonly [K in keyof WidgetEvents]: { readonly type: K; readonly detail: WidgetEvents[K] } }[keyof WidgetEvents]
export const eventTypes: ReadonlyArray<keyof WidgetEvents> = [
  "hearken:ready", "hearken:suggestions", "hearken:suggestion-selected", "hearken:submitted", "hearken:error", "hearken:open", "hearken:close"
]

/** A template (`{slug}`, `{id}`), or in `widget.js` a function of the suggestion. */
export type PostUrl = string | ((suggestion: Suggestion) => string | URL | null | undefined)

/** The options that mean the same in the frame and in the page: plain data, so they cross to the frame. */
export interface SharedOptions {
  /** The organization whose boards and changelog are shown. */
  readonly organizationId: string
  /** An identity token signed by the host's backend (docs/api.md: "Identity tokens"), sent with each post. */
  readonly token?: string | undefined
  /** A BCP 47 tag. Defaults to the page's `<html lang>`, then the browser's languages, then English. */
  readonly locale?: string | undefined
  /** Replaces any message, in any language. */
  readonly messages?: MessageOverrides | undefined
  /** `light` (the default), `dark`, or `auto`: the visitor's `prefers-color-scheme`, followed live. */
  readonly theme?: Theme | undefined
  /** A CSS colour for buttons, the selected tab and focus; text on and in it keeps AA contrast. */
  readonly accent?: string | undefined
  /** Any documented `--hearken-…` colour, as CSS would set it: `{ "--hearken-radius": "4px" }`. */
  readonly variables?: Readonly<Record<string, string>> | undefined
  /** Makes each changelog entry's title a link: a template (`{slug}`, `{id}`); only http(s) URLs are used. */
  readonly updateUrl?: string | undefined
  /** The board selected at first. With one public board, the choice is not shown at all. */
  readonly boardId?: string | undefined
}

export interface InitOptions extends SharedOptions {
  /** The Hearken server; defaults to the origin this script was loaded from. */
  readonly baseUrl?: string | undefined
  /** Where to mount: an element or a selector. Defaults to a new element at the end of `<body>`. */
  readonly target?: Element | string | undefined
  /** `inline` (the default): where `target` is; `launcher`: a floating button that opens the widget in a popover. */
  readonly mode?: "inline" | "launcher" | undefined
  /** The launcher's corner, at the bottom: `end` (the default; right in a left-to-right language) or `start`. */
  readonly position?: "start" | "end" | undefined
  /**
   * Makes each suggestion, and the new post after sending, a link: a template
   * (`{slug}`, `{id}`) or, in `widget.js` only, a function; only http(s) URLs
   * are used, relative ones against the page.
   */
  readonly postUrl?: PostUrl | undefined
  /** Called with each event, as it is also dispatched on the host element. */
  readonly onEvent?: ((event: WidgetEvent) => void) | undefined
}

export interface WidgetHandle {
  /** Replaces the identity token (e.g. after the visitor signs in). */
  readonly setToken: (token: string | undefined) => void
  /** `mode: "launcher"`: opens or closes the popover. */
  readonly open: () => void
  readonly close: () => void
  readonly destroy: () => void
}

/** What `ui.ts` renders with. */
export interface MountOptions extends SharedOptions {
  readonly postUrl?: PostUrl | undefined
  /** What relative links are resolved against: the host page's base URL. */
  readonly linkBase: string
  /** The host page's `<html lang>`, which the frame cannot read. */
  readonly pageLang?: string | undefined
  /** A URL on the API's server fetched `no-cors` when a call fails, to tell a refused origin from a server down. */
  readonly probeUrl?: string | undefined
}

/** The element `target` names; undefined when it is not given. */
export const targetOf = (target: InitOptions["target"]): Element | undefined => {
  const found = typeof target === "string" ? document.querySelector(target) : target
  if (target !== undefined && !found) throw new Error(`HearkenWidget: no element matches ${String(target)}`)
  return found ?? undefined
}
