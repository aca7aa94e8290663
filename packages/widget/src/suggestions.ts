/**
 * Similar posts while the visitor drafts (`suggestions.js`): the scheduler
 * that decides when to ask, and the list it shows. A module of its own that
 * the widget fetches when the visitor first types.
 */
import { overLimit, type Draft } from "./checks.js"
import type { Context } from "./context.js"
import { external, h } from "./dom.js"
import type { Suggestion } from "./options.js"
import { SuggestionScheduler } from "./scheduler.js"

export interface Suggester {
  /** The draft changed: a draft too short (or too long) to ask about shows no stale list; else ask once typing pauses. */
  readonly changed: () => void
  /** Forget the pending request (after a post, or when the widget goes away). */
  readonly reset: () => void
}

/** Asks the API about `draft()` when the scheduler says so, and shows the answer in `similar`, a polite live region. */
export const suggester = (c: Context, draft: () => Draft, similar: HTMLElement): Suggester => {
  const { t, emit } = c

  /** The draft's identity, or undefined when there is nothing worth asking about (or no widget any more). */
  const draftKey = (d = draft()) =>
    c.live() && d.boardId !== "" && d.title.length >= 3 && overLimit(d) === undefined
      ? JSON.stringify([d.boardId, d.title, d.content]) : undefined

  const item = (s: Suggestion) => {
    const name = h("strong", { dir: "auto" }, s.title)
    const url = c.linkFor(s)
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
    similar.replaceChildren(...list.length === 0 ? [] : [
      h("h3", {}, t("similar", { count: list.length })),
      h("ul", {}, ...list.map(item))
    ])
    emit("hearken:suggestions", { count: list.length, boardId, posts: list.map((s) => ({ id: s.id, slug: s.slug })) })
  }

  const scheduler = new SuggestionScheduler({
    draftKey: () => draftKey(),
    request: async () => {
      const asked = draft()
      const key = draftKey(asked)
      const answer = await c.client.suggestions(asked)
      // The draft changed while the answer travelled (typed on, sent, or the widget destroyed): it answers nothing shown.
      if (answer.ok && key !== draftKey()) return undefined
      if (answer.ok) {
        render(asked.boardId, answer.value)
        return undefined
      }
      c.failed("suggestions", answer.error)
      // 429 and 503: wait quietly for Retry-After; anything else leaves the list as it was.
      return "retryAfterSeconds" in answer.error ? answer.error.retryAfterSeconds : undefined
    }
  })

  return {
    changed: () => {
      if (draftKey() === undefined) similar.replaceChildren()
      scheduler.changed()
    },
    reset: () => scheduler.reset()
  }
}
