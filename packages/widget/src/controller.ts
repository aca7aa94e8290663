/**
 * The post tab's controller: it builds the tab (`boards.ts`, `form.ts`) and
 * runs it: the draft, the suggestion scheduler that asks about it, each
 * field's error and live count, and sending the draft, once, with an
 * `Idempotency-Key`. Field errors come from the widget's own checks
 * (`checks.ts`), never from the server's message text.
 */
import { Limits } from "@hearken/api/thin"
import { boards, selectedBoard, type LoadBoards } from "./boards.js"
import { check, limited, type Draft, type Field } from "./checks.js"
import type { Context } from "./context.js"
import { external } from "./dom.js"
import { form } from "./form.js"
import { codePoints, textToHtml } from "./links.js"
import { importSibling } from "./sibling.js"
import type { Suggester } from "./suggestions.js"

/**
 * A new Idempotency-Key: 128 random bits, as a UUID where `crypto.randomUUID`
 * exists (secure contexts), else as 32 hex digits (any visible ASCII will do).
 */
const newKey = (): string =>
  crypto.randomUUID?.() ?? [...crypto.getRandomValues(new Uint8Array(16))].map((n) => n.toString(16).padStart(2, "0")).join("")

/**
 * The post tab of the widget `c`; `token()` is the identity token to send
 * with a post, if any. Gives the tab's panel, what loads the boards, and what
 * forgets the pending suggestion request (when the widget goes away).
 */
export const controller = (c: Context, token: () => string | undefined): [panel: HTMLElement, loadBoards: LoadBoards, stop: () => void] => {
  const { t, id } = c
  const [fieldset, list, loadBoards] = boards(c, () => {
    element.hidden = true
  })
  const [panel, element, title, content, similar, submit, success, again] = form(c, fieldset)

  const draft = (): Draft =>
    ({ organizationId: c.options.organizationId, boardId: selectedBoard(list), title: title.value.trim(), content: textToHtml(content.value) })

  // ------------------------------------------------------------ field errors and limits

  const controls = { title, content, boardId: fieldset }
  /** The element `NAME` of this widget's post tab (an error or a count), found before the widget is in the page. */
  const byId = (name: string) => panel.querySelector<HTMLElement>(`#${id(name)}`)!
  const errorOf = (name: Field) => byId(name === "boardId" ? "board-error" : `${name}-error`)
  const clearError = (name: Field) => {
    controls[name].removeAttribute("aria-invalid")
    errorOf(name).textContent = ""
  }
  const markInvalid = (name: Field, text: string) => {
    controls[name].setAttribute("aria-invalid", "true")
    errorOf(name).textContent = text
  }
  const showFieldError = (name: Field, text: string) => {
    markInvalid(name, text)
    ;(name === "boardId" ? list.querySelector("input") ?? fieldset : controls[name]).focus()
  }
  /** A live count once a field nears its limit (80 %), and the limit named in the visitor's language past it. */
  const showLimits = () => {
    const d = draft()
    for (const name of limited) {
      const used = codePoints(d[name])
      const limit = Limits[name]
      byId(`${name}-count`).textContent = used >= limit * 0.8 && used <= limit ? t("charsLeft", { count: limit - used }) : ""
      if (used > limit) markInvalid(name, t("tooLong", { count: limit }))
      else clearError(name)
    }
  }

  // ------------------------------------------------------------ suggestions

  /** Suggestions are their own module (`suggestions.js`), fetched when the visitor first types: the first download stays small. */
  let suggester: Suggester | undefined
  let loadingSuggester: Promise<unknown> | undefined
  const onDraftChange = () => {
    if (suggester !== undefined) return suggester.changed()
    loadingSuggester ??= importSibling<typeof import("./suggestions.js")>("suggestions.js").then((module) => {
      if (!c.live() || module === undefined) return // no suggestions; posting works without them
      suggester = module.suggester(c, draft, similar)
      suggester.changed()
    })
  }

  // ------------------------------------------------------------ sending

  /** One key per draft: a retry or a double click of the same draft sends the same key. */
  let idempotency: { draft: string; key: string } | undefined
  let sending = false

  const send = async () => {
    if (sending) return
    for (const name of ["title", "content", "boardId"] as const) clearError(name)
    c.alert("")
    const d = draft()
    const refused = check(d, t, c.english)
    if (refused !== undefined) return showFieldError(...refused)
    const signed = token()
    const payload = { ...d, ...(signed === undefined ? {} : { token: signed }) }
    const fingerprint = JSON.stringify(payload)
    if (idempotency?.draft !== fingerprint) idempotency = { draft: fingerprint, key: newKey() }
    sending = true
    submit.disabled = true
    submit.textContent = t("sending")
    try {
      const answer = await c.client.feedback(payload, { idempotencyKey: idempotency.key })
      if (!answer.ok) {
        c.failed("feedback", answer.error)
        // Not about a field the widget checks (it checked those): said in the alert.
        return c.alert(answer.error)
      }
      const post = answer.value
      idempotency = undefined
      suggester?.reset()
      element.reset()
      showLimits()
      // Keep the board: the next post most likely goes to the same one.
      const kept = list.querySelector<HTMLInputElement>(`input[value="${CSS.escape(d.boardId)}"]`)
      if (kept) kept.checked = true
      similar.replaceChildren()
      element.hidden = true
      again.hidden = false
      const url = c.linkFor({ id: post.id, slug: post.slug, title: post.title, excerpt: "" })
      success.replaceChildren(t("thanks", { title: post.title }), ...url === undefined ? [] : [" ", external(url, t, t("viewPost"))])
      again.focus()
      c.emit("hearken:submitted", { id: post.id, slug: post.slug, boardId: post.boardId })
    } finally {
      sending = false
      submit.disabled = false
      submit.textContent = t("submit")
    }
  }

  element.addEventListener("submit", (event) => {
    event.preventDefault()
    void send()
  })
  for (const control of [title, content]) {
    control.addEventListener("input", () => {
      showLimits()
      onDraftChange()
    })
  }
  list.addEventListener("change", () => {
    clearError("boardId")
    onDraftChange()
  })
  again.addEventListener("click", () => {
    success.textContent = ""
    again.hidden = true
    element.hidden = false
    title.focus()
  })

  return [panel, loadBoards, () => suggester?.reset()]
}
