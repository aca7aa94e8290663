/**
 * The boards: the radio buttons the visitor picks one from (hidden when
 * there is only one), their error, and loading them, revalidated with
 * `If-None-Match`.
 */
import { h } from "./dom.js"
import type { Context } from "./context.js"
import type { Board } from "./options.js"

/** Loads the boards; `pending`: a request already sent. */
export type LoadBoards = (pending?: ReturnType<Context["client"]["boards"]>) => Promise<void>

/** The board picked in `list`, or "". */
export const selectedBoard = (list: HTMLElement): string => list.querySelector<HTMLInputElement>("input:checked")?.value ?? ""

/**
 * The boards' fieldset, the list of radio buttons in it (a board picked is a
 * `change` event on it) and what loads them. `unavailable`: the API refuses
 * this page's origin.
 */
export const boards = (c: Context, unavailable: () => void): [fieldset: HTMLFieldSetElement, list: HTMLElement, load: LoadBoards] => {
  const { t, id, options } = c
  const loading = () => h("span", { class: "muted" }, t("loadingBoards"))
  const list = h("div", { class: "boards" }, loading())
  const fieldset = h("fieldset", { "aria-describedby": id("board-error") },
    h("legend", {}, t("board")), list, h("p", { class: "error", id: id("board-error") }))
  /** The last list's `ETag`, sent as `If-None-Match`: an unchanged list is not rendered again. */
  let etag: string | undefined

  const render = (boards: ReadonlyArray<Board>) => {
    if (boards.length === 0) {
      list.replaceChildren(h("span", { class: "muted" }, t("noBoards")))
      return
    }
    // The board the visitor picked, else the host's `boardId`, else the only one.
    // (A `boardId` no longer listed is ignored: with one board left, that one is chosen.)
    const previous = selectedBoard(list) || boards.find((board) => board.id === options.boardId)?.id || (boards.length === 1 ? boards[0]!.id : "")
    list.replaceChildren(...boards.map((board) => {
      const radio = h("input", { type: "radio", name: id("board"), value: board.id })
      radio.checked = board.id === previous
      return h("label", { class: "board" }, radio, h("span", { dir: "auto" }, board.name))
    }))
    // One board: nothing to choose.
    fieldset.hidden = boards.length === 1
  }

  /**
   * The API refused the call without an answer the page can read: the
   * server is down, or it answers but CORS refuses this page's origin. A
   * script any page may read (`probeUrl`, served with
   * `Access-Control-Allow-Origin: *`) tells the two apart: it comes, and
   * is 200, only when the server itself answers (a proxy's 502 is not).
   */
  const refusedOrigin = () =>
    options.probeUrl !== undefined && fetch(options.probeUrl, { cache: "no-store" }).then((answer) => answer.ok, () => false)

  const load: LoadBoards = async (pending = c.client.boards({ organizationId: options.organizationId }, { ifNoneMatch: etag })) => {
    const answer = await pending
    if (!answer.ok) {
      c.failed("boards", answer.error)
      if (answer.error._tag === "NetworkError" && await refusedOrigin()) {
        // Nothing the visitor can do: no "Try again". The site owner reads the console.
        console.error(`Hearken: CORS refuses ${location.origin}; /widget/embed.js works on any site`)
        fieldset.hidden = true
        unavailable()
        c.alert(t("unavailable"))
        return
      }
      const retry = h("button", { type: "button", class: "secondary" }, t("retry"))
      retry.addEventListener("click", () => {
        c.alert("")
        list.replaceChildren(loading())
        void load()
      })
      list.replaceChildren(h("span", { class: "muted" }, t("boardsFailed")), retry)
      c.alert(answer.error)
      return
    }
    if (!("notModified" in answer)) {
      if (answer.etag !== undefined) etag = answer.etag
      render(answer.value)
    }
  }

  return [fieldset, list, load]
}
