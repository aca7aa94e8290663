/**
 * Similar posts while the visitor drafts (`suggestions.js`): the scheduler
 * that decides when to ask, and the list it shows. A module of its own that
 * the widget fetches when the visitor first types.
 */
import type { ClientError, EndpointId, Payload, ThinClient } from "@hearken/api/thin"
import { external, h } from "./dom.js"
import type { Translate } from "./i18n.js"
import type { Suggestion, WidgetEvents } from "./options.js"
import { SuggestionScheduler } from "./scheduler.js"

export const suggester = (context: {
  readonly client: ThinClient
  readonly draft: () => Payload<"suggestions">
  /** The draft's identity; undefined when there is nothing to ask about. */
  readonly draftKey: (draft?: Payload<"suggestions">) => string | undefined
  /** Where the list goes: a polite live region. */
  readonly similar: HTMLElement
  readonly t: Translate
  readonly emit: <K extends keyof WidgetEvents>(type: K, detail: WidgetEvents[K]) => void
  readonly failed: (operation: EndpointId, error: ClientError<EndpointId>) => void
  readonly linkFor: (post: Suggestion) => string | undefined
}): SuggestionScheduler => {
  const { t, emit } = context

  const item = (s: Suggestion) => {
    const name = h("strong", { dir: "auto" }, s.title)
    const url = context.linkFor(s)
    const excerpt = s.excerpt ? h("span", { class: "muted", dir: "auto" }, s.excerpt) : ""
    if (url === undefined) return h("li", {}, name, excerpt)
    const link = external(url, t, name)
    const selected = (event: MouseEvent) => {
      if (event.type === "click" || event.button === 1) emit("hearken:suggestion-selected", { id: s.id, slug: s.slug, url })
    }
    link.addEventListener("click", selected)
    link.addEventListener("auxclick", selected)
    return h("li", {}, link, excerpt)
  }

  const render = (boardId: string, list: ReadonlyArray<Suggestion>) => {
    context.similar.replaceChildren(...list.length === 0 ? [] : [
      h("h3", {}, t("similar", { count: list.length })),
      h("ul", {}, ...list.map(item))
    ])
    emit("hearken:suggestions", { count: list.length, boardId, posts: list.map((s) => ({ id: s.id, slug: s.slug })) })
  }

  return new SuggestionScheduler({
    draftKey: () => context.draftKey(),
    request: async () => {
      const asked = context.draft()
      const key = context.draftKey(asked)
      const answer = await context.client.suggestions(asked)
      // The draft changed while the answer travelled (typed on, sent, or the widget destroyed): it answers nothing shown.
      if (answer.ok && key !== context.draftKey()) return undefined
      if (answer.ok) {
        render(asked.boardId, answer.value)
        return undefined
      }
      context.failed("suggestions", answer.error)
      // 429 and 503: wait quietly for Retry-After; anything else leaves the list as it was.
      return "retryAfterSeconds" in answer.error ? answer.error.retryAfterSeconds : undefined
    }
  })
}
