/**
 * Hearken's embeddable feedback widget: the organization's public boards, a
 * draft form with similar posts, and the changelog, in a shadow root.
 *
 *   <div id="hearken"></div>
 *   <script type="module">
 *     import { HearkenWidget } from "https://YOUR-HEARKEN/widget/widget.js"
 *     HearkenWidget.init({ organizationId: "org_…", target: "#hearken" })
 *   </script>
 *
 * Everything the API answers is plain text (`textContent`) except an update's
 * `content`, which the server has sanitized and which is rendered as HTML.
 */
import { makeThinClient, type ClientError, type EndpointId, type Success, type ThinClient } from "@hearken/api/thin"
import css from "./styles.css"
import { SuggestionScheduler } from "./scheduler.js"

export interface InitOptions {
  /** The organization whose boards and changelog are shown. */
  readonly organizationId: string
  /** An identity token signed by the host's backend (README: "Identity tokens"), sent with each post. */
  readonly token?: string | undefined
  /** The Hearken server; defaults to the origin this script was loaded from. */
  readonly baseUrl?: string | undefined
  /** Where to mount: an element or a selector. Defaults to a new element at the end of `<body>`. */
  readonly target?: Element | string | undefined
}

export interface WidgetHandle {
  /** Replaces the identity token (e.g. after the visitor signs in). */
  readonly setToken: (token: string | undefined) => void
  readonly destroy: () => void
}

type Board = Success<"boards">[number]
type Update = Success<"updates">[number]
type Suggestion = Success<"suggestions">[number]

const unreachable = "Can't reach the feedback service from this page."

let counter = 0

/** `h("p", { class: "x" }, "text", child)`: an element; strings become text nodes (never HTML). */
const h = <K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | boolean | undefined> = {},
  ...children: Array<Node | string>
): HTMLElementTagNameMap[K] => {
  const el = document.createElement(tag)
  for (const [name, value] of Object.entries(attrs)) {
    if (value === true) el.setAttribute(name, "")
    else if (typeof value === "string") el.setAttribute(name, value)
  }
  el.append(...children)
  return el
}

/** A v4 UUID; `crypto.randomUUID` exists only in secure contexts, `getRandomValues` everywhere. */
const uuid = (): string => {
  if (typeof crypto.randomUUID === "function") return crypto.randomUUID()
  const b = crypto.getRandomValues(new Uint8Array(16))
  b[6] = (b[6]! & 0x0f) | 0x40
  b[8] = (b[8]! & 0x3f) | 0x80
  const x = [...b].map((n) => n.toString(16).padStart(2, "0")).join("")
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`
}

/** A readable sentence for an error that is not about one field. */
const describe = (error: ClientError<EndpointId>): string => {
  switch (error._tag) {
    case "NetworkError":
      return unreachable
    case "RateLimitExceededError":
    case "RateLimitUnavailableError":
      return `The feedback service is busy. Please try again in ${error.retryAfterSeconds} s.`
    case "UnauthorizedError":
      return "Your sign-in could not be verified. Reload the page and try again."
    case "NotFoundError":
      return "This board no longer exists. Reload the page and pick another."
    case "DataValidationError":
      return error.message ?? "Please check the form."
    default:
      return "Something went wrong on our side. Please try again."
  }
}

const escapes: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;" }

/**
 * What the visitor typed, as the HTML the API takes: escaped, paragraphs at
 * blank lines, line breaks kept. `a < b` and `<b>` stay text, exactly as typed.
 */
export const textToHtml = (text: string): string =>
  text.trim() === "" ? "" : text.trim().split(/\n\s*\n/).map((paragraph) =>
    `<p>${paragraph.trim().replace(/[&<>"]/g, (c) => escapes[c]!).replace(/\n/g, "<br>")}</p>`).join("")

const scriptOrigin = (): string => new URL(import.meta.url).origin

const init = (options: InitOptions): WidgetHandle => {
  const { organizationId } = options
  let token = options.token
  const client: ThinClient = makeThinClient(options.baseUrl ?? scriptOrigin())
  const target = typeof options.target === "string" ? document.querySelector(options.target) : options.target
  if (options.target !== undefined && !target) throw new Error(`HearkenWidget: no element matches ${String(options.target)}`)
  const host = target ?? document.body.appendChild(document.createElement("div"))
  const root = host.shadowRoot ?? host.attachShadow({ mode: "open" })
  root.replaceChildren()
  const id = (name: string) => `hk${counter}-${name}`
  counter++

  // ------------------------------------------------------------ skeleton

  const tab = (name: string, label: string, selected: boolean) =>
    h("button", {
      type: "button",
      role: "tab",
      id: id(`tab-${name}`),
      "aria-controls": id(`panel-${name}`),
      "aria-selected": String(selected),
      tabindex: selected ? "0" : "-1"
    }, label)
  const tabs = [tab("post", "Give feedback", true), tab("updates", "What's new", false)]
  const tablist = h("div", { role: "tablist", "aria-label": "Feedback" }, ...tabs)
  /** Failures that concern the whole widget (network, CORS, busy): announced at once. */
  const alert = h("div", { class: "alert", role: "alert" })

  const boardList = h("div", { class: "boards" }, h("span", { class: "muted" }, "Loading boards…"))
  const boardError = h("p", { class: "error", id: id("board-error") })
  const boards = h("fieldset", { "aria-describedby": id("board-error") }, h("legend", {}, "Board"), boardList, boardError)

  const field = (name: "title" | "content", label: string, control: HTMLInputElement | HTMLTextAreaElement) => {
    control.id = id(name)
    control.name = name
    control.setAttribute("aria-describedby", id(`${name}-error`))
    return h("div", { class: "field" }, h("label", { for: control.id }, label), control,
      h("p", { class: "error", id: id(`${name}-error`) }))
  }
  // No maxlength: browsers count UTF-16 units, the server counts code points (200 emoji make a valid title) and says which field is too long.
  const title = h("input", { type: "text", autocomplete: "off", required: true })
  const content = h("textarea", { rows: "4" })
  /** Similar posts; polite, so a screen reader hears them after the visitor stops typing. */
  const similar = h("div", { class: "similar", "aria-live": "polite", id: id("similar") })
  const submit = h("button", { type: "submit", class: "primary" }, "Send feedback")
  const form = h("form", { novalidate: true, "aria-labelledby": id("form-title") },
    h("h2", { id: id("form-title") }, "Tell us what you need"),
    boards,
    field("title", "Title", title),
    field("content", "Details (optional)", content),
    similar,
    submit)
  /** The success message; a status region, so it is announced without moving focus. */
  const success = h("div", { class: "success", role: "status", id: id("success") })
  const again = h("button", { type: "button", class: "secondary", hidden: true }, "Send more feedback")
  const postPanel = h("section", { role: "tabpanel", id: id("panel-post"), "aria-labelledby": id("tab-post") },
    success, again, form)

  const updateList = h("ul", { class: "updates" })
  const updatesStatus = h("p", { class: "muted", role: "status" })
  const updatesPanel = h("section", {
    role: "tabpanel",
    id: id("panel-updates"),
    "aria-labelledby": id("tab-updates"),
    tabindex: "0",
    hidden: true
  }, updatesStatus, updateList)

  const style = h("style", {}, css)
  root.append(style, h("div", { class: "hk" }, tablist, alert, postPanel, updatesPanel))

  const showAlert = (message: string) => {
    alert.textContent = message
  }

  // ------------------------------------------------------------ tabs (WAI-ARIA tabs, automatic activation)

  const panels = [postPanel, updatesPanel]
  const select = (index: number, focus: boolean) => {
    tabs.forEach((t, i) => {
      t.setAttribute("aria-selected", String(i === index))
      t.tabIndex = i === index ? 0 : -1
      panels[i]!.hidden = i !== index
    })
    if (focus) tabs[index]!.focus()
    if (index === 1) void loadUpdates()
  }
  tabs.forEach((t, i) => t.addEventListener("click", () => select(i, false)))
  tablist.addEventListener("keydown", (event) => {
    const current = tabs.findIndex((t) => t.getAttribute("aria-selected") === "true")
    const next = event.key === "ArrowRight" ? current + 1
      : event.key === "ArrowLeft" ? current - 1
      : event.key === "Home" ? 0
      : event.key === "End" ? tabs.length - 1
      : undefined
    if (next === undefined) return
    event.preventDefault()
    select((next + tabs.length) % tabs.length, true)
  })

  // ------------------------------------------------------------ boards

  let boardsCache: { etag: string; value: ReadonlyArray<Board> } | undefined
  const selectedBoard = (): string =>
    boardList.querySelector<HTMLInputElement>("input:checked")?.value ?? ""

  const renderBoards = (list: ReadonlyArray<Board>) => {
    if (list.length === 0) {
      boardList.replaceChildren(h("span", { class: "muted" }, "There is no public board yet."))
      return
    }
    const previous = selectedBoard()
    boardList.replaceChildren(...list.map((board) => {
      const radio = h("input", { type: "radio", name: id("board"), value: board.id })
      radio.checked = board.id === previous
      radio.addEventListener("change", () => {
        clearError("boardId")
        onDraftChange()
      })
      return h("label", { class: "board" }, radio, board.name)
    }))
  }

  const loadBoards = async () => {
    const answer = await client.boards({ organizationId }, { ifNoneMatch: boardsCache?.etag })
    if (!answer.ok) {
      const retry = h("button", { type: "button", class: "secondary" }, "Try again")
      retry.addEventListener("click", () => {
        showAlert("")
        boardList.replaceChildren(h("span", { class: "muted" }, "Loading boards…"))
        void loadBoards()
      })
      boardList.replaceChildren(h("span", { class: "muted" }, "Boards could not be loaded."), retry)
      showAlert(describe(answer.error))
      return
    }
    if (!("notModified" in answer)) {
      if (answer.etag !== undefined) boardsCache = { etag: answer.etag, value: answer.value }
      renderBoards(answer.value)
    }
  }

  // ------------------------------------------------------------ field errors

  const controls = { title, content, boardId: boards } as const
  type Field = keyof typeof controls
  const errorOf = (name: Field) => name === "boardId" ? boardError : root.getElementById(id(`${name}-error`))!

  const clearError = (name: Field) => {
    controls[name].removeAttribute("aria-invalid")
    errorOf(name).textContent = ""
  }
  const clearErrors = () => {
    for (const name of Object.keys(controls) as Array<Field>) clearError(name)
    showAlert("")
  }
  /** `DataValidationError` messages start with the field: "title: Expected …". */
  const showValidation = (message: string): boolean => {
    const match = /^(\w+): (.*)$/s.exec(message)
    const name = match?.[1]
    if (match === null || name === undefined || !(name in controls)) return false
    const text = match[2]!
    controls[name as Field].setAttribute("aria-invalid", "true")
    errorOf(name as Field).textContent = text.charAt(0).toUpperCase() + text.slice(1)
    ;(name === "boardId" ? boardList.querySelector("input") ?? boards : controls[name as Field]).focus()
    return true
  }

  // ------------------------------------------------------------ suggestions

  const draft = () => ({ organizationId, boardId: selectedBoard(), title: title.value.trim(), content: textToHtml(content.value) })

  const renderSuggestions = (list: ReadonlyArray<Suggestion>) => {
    if (list.length === 0) {
      similar.replaceChildren()
      return
    }
    similar.replaceChildren(
      h("h3", {}, list.length === 1 ? "A similar post already exists" : `${list.length} similar posts already exist`),
      h("ul", {}, ...list.map((s) =>
        h("li", {}, h("strong", {}, s.title), s.excerpt ? h("span", { class: "muted" }, s.excerpt) : ""))))
  }

  const scheduler = new SuggestionScheduler({
    draftKey: () => {
      const d = draft()
      return d.boardId !== "" && d.title.length >= 3 ? JSON.stringify([d.boardId, d.title, d.content]) : undefined
    },
    request: async () => {
      const answer = await client.suggestions(draft())
      if (answer.ok) {
        renderSuggestions(answer.value)
        return undefined
      }
      // 429 and 503: wait quietly for Retry-After; anything else leaves the list as it was.
      return "retryAfterSeconds" in answer.error ? answer.error.retryAfterSeconds : undefined
    }
  })
  const onDraftChange = () => {
    // A draft too short to ask about shows no stale list.
    if (draft().title.length < 3) similar.replaceChildren()
    scheduler.changed()
  }

  // ------------------------------------------------------------ submitting

  /** One key per draft: a retry or a double click of the same draft sends the same key. */
  let idempotency: { draft: string; key: string } | undefined
  let sending = false

  const submitDraft = async () => {
    if (sending) return
    clearErrors()
    const d = draft()
    if (d.boardId === "") {
      showValidation("boardId: Pick a board.")
      return
    }
    if (d.title === "") {
      showValidation("title: Please give your feedback a title.")
      return
    }
    const payload = { ...d, ...(token === undefined ? {} : { token }) }
    const fingerprint = JSON.stringify(payload)
    if (idempotency?.draft !== fingerprint) idempotency = { draft: fingerprint, key: uuid() }
    sending = true
    submit.disabled = true
    submit.textContent = "Sending…"
    try {
      const answer = await client.feedback(payload, { idempotencyKey: idempotency.key })
      if (answer.ok) {
        idempotency = undefined
        scheduler.reset()
        form.reset()
        // Keep the board: the next post most likely goes to the same one.
        const kept = boardList.querySelector<HTMLInputElement>(`input[value="${CSS.escape(d.boardId)}"]`)
        if (kept) kept.checked = true
        similar.replaceChildren()
        form.hidden = true
        again.hidden = false
        success.textContent = `Thank you! Your feedback “${answer.value.title}” was posted.`
        again.focus()
        return
      }
      if (answer.error._tag !== "DataValidationError" || !showValidation(answer.error.message ?? "")) {
        showAlert(describe(answer.error))
      }
    } finally {
      sending = false
      submit.disabled = false
      submit.textContent = "Send feedback"
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault()
    void submitDraft()
  })
  for (const control of [title, content]) {
    control.addEventListener("input", () => {
      clearError(control === title ? "title" : "content")
      onDraftChange()
    })
  }
  again.addEventListener("click", () => {
    success.textContent = ""
    again.hidden = true
    form.hidden = false
    title.focus()
  })

  // ------------------------------------------------------------ changelog (conditional GET)

  let updatesCache: { etag: string | undefined; value: ReadonlyArray<Update> } | undefined
  let loadingUpdates = false
  const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "long" })

  const renderUpdates = (list: ReadonlyArray<Update>) => {
    updatesStatus.textContent = list.length === 0 ? "Nothing new yet." : ""
    updateList.replaceChildren(...list.map((update) => {
      const body = h("div", { class: "content" })
      body.innerHTML = update.content // sanitized by the server (README: "Rendering answers")
      return h("li", {},
        h("h2", {}, update.title),
        update.publishedAt === undefined ? ""
          : h("time", { class: "muted", datetime: update.publishedAt }, dateFormat.format(new Date(update.publishedAt))),
        body)
    }))
  }

  const loadUpdates = async () => {
    if (loadingUpdates) return
    loadingUpdates = true
    if (updatesCache === undefined) updatesStatus.textContent = "Loading…"
    try {
      const answer = await client.updates({ organizationId }, { ifNoneMatch: updatesCache?.etag })
      if (!answer.ok) {
        updatesStatus.textContent = updatesCache === undefined ? "The changelog could not be loaded." : ""
        showAlert(describe(answer.error))
        return
      }
      if ("notModified" in answer) return
      updatesCache = { etag: answer.etag, value: answer.value }
      renderUpdates(answer.value)
    } finally {
      loadingUpdates = false
    }
  }

  void loadBoards()

  return {
    setToken: (next) => {
      token = next
    },
    destroy: () => {
      scheduler.reset()
      root.replaceChildren()
      if (target === null || target === undefined) host.remove()
    }
  }
}

export const HearkenWidget = { init }

declare global {
  interface Window {
    HearkenWidget: typeof HearkenWidget
  }
}
if (typeof window !== "undefined") window.HearkenWidget = HearkenWidget
