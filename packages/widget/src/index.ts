/**
 * Hearken's embeddable feedback widget: the organization's public boards, a
 * draft form with similar posts, and the changelog, in a shadow root, in the
 * visitor's language and the site's colours.
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
import { load, merge, resolve, translator, type MessageOverrides } from "./i18n.js"
import { en } from "./messages.js"
import { SuggestionScheduler } from "./scheduler.js"
import { importSibling } from "./sibling.js"
import css from "./styles.css"
import { applyTheme, type Theme } from "./theme.js"

export type { Messages, Plural } from "./messages.js"
export type { MessageOverrides } from "./i18n.js"
export type { Theme } from "./theme.js"

type Board = Success<"boards">[number]
type Update = Success<"updates">[number]
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
}
export type WidgetEvent = { readonly [K in keyof WidgetEvents]: { readonly type: K; readonly detail: WidgetEvents[K] } }[keyof WidgetEvents]

export interface InitOptions {
  /** The organization whose boards and changelog are shown. */
  readonly organizationId: string
  /** An identity token signed by the host's backend (README: "Identity tokens"), sent with each post. */
  readonly token?: string | undefined
  /** The Hearken server; defaults to the origin this script was loaded from. */
  readonly baseUrl?: string | undefined
  /** Where to mount: an element or a selector. Defaults to a new element at the end of `<body>`. */
  readonly target?: Element | string | undefined
  /** A BCP 47 tag. Defaults to the page's `<html lang>`, then the browser's languages, then English. */
  readonly locale?: string | undefined
  /** Replaces any message, in any language. */
  readonly messages?: MessageOverrides | undefined
  /** `light` (the default), `dark`, or `auto`: the visitor's `prefers-color-scheme`, followed live. */
  readonly theme?: Theme | undefined
  /** A CSS colour for buttons, the selected tab and focus; text on and in it keeps AA contrast. */
  readonly accent?: string | undefined
  /** Makes each suggestion a link: a template (`{slug}`, `{id}`) or a function; only http(s) URLs are used. */
  readonly postUrl?: string | ((suggestion: Suggestion) => string | URL | null | undefined) | undefined
  /** Called with each event, as it is also dispatched on the host element. */
  readonly onEvent?: ((event: WidgetEvent) => void) | undefined
}

export interface WidgetHandle {
  /** Replaces the identity token (e.g. after the visitor signs in). */
  readonly setToken: (token: string | undefined) => void
  readonly destroy: () => void
}

let counter = 0
/** The widget in each shadow root: `init` on a target that has one replaces it. */
const mounted = new WeakMap<ShadowRoot, WidgetHandle>()

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

const escapes: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;" }

/**
 * What the visitor typed, as the HTML the API takes: escaped, paragraphs at
 * blank lines, line breaks kept. `a < b` and `<b>` stay text, exactly as typed.
 */
export const textToHtml = (text: string): string =>
  text.trim() === "" ? "" : text.trim().split(/\n\s*\n/).map((paragraph) =>
    `<p>${paragraph.trim().replace(/[&<>"]/g, (c) => escapes[c]!).replace(/\n/g, "<br>")}</p>`).join("")

/** The link for a suggestion, if `postUrl` makes an http(s) URL of it (relative ones against the page). */
export const linkOf = (postUrl: InitOptions["postUrl"], suggestion: Suggestion): string | undefined => {
  try {
    const made: unknown = typeof postUrl === "function" ? postUrl(suggestion)
      : postUrl?.replace(/\{(slug|id)\}/g, (_, name: "slug" | "id") => encodeURIComponent(suggestion[name]))
    // `undefined`, `null`, `""` or anything else that is not a URL: no link (`new URL(null)` would make one).
    if (!(made instanceof URL) && (typeof made !== "string" || made === "")) return undefined
    const url = new URL(made, document.baseURI)
    return url.protocol === "https:" || url.protocol === "http:" ? url.href : undefined
  } catch {
    return undefined // the host's function threw, or made no URL
  }
}

const scriptOrigin = (): string => new URL(import.meta.url).origin

const init = (options: InitOptions): WidgetHandle => {
  const { organizationId } = options
  let token = options.token
  const client: ThinClient = makeThinClient(options.baseUrl ?? scriptOrigin())
  const target = typeof options.target === "string" ? document.querySelector(options.target) : options.target
  if (options.target !== undefined && !target) throw new Error(`HearkenWidget: no element matches ${String(options.target)}`)
  const host = target ?? document.body.appendChild(document.createElement("div"))
  const root = host.shadowRoot ?? host.attachShadow({ mode: "open" })
  mounted.get(root)?.destroy()
  root.replaceChildren()
  const id = (name: string) => `hk${counter}-${name}`
  counter++

  let destroyed = false
  const emit = <K extends keyof WidgetEvents>(type: K, detail: WidgetEvents[K]) => {
    if (destroyed) return // an answer that arrives after `destroy`
    host.dispatchEvent(new CustomEvent(type, { detail, bubbles: true, composed: true }))
    try {
      options.onEvent?.({ type, detail } as WidgetEvent)
    } catch (error) {
      reportError(error) // the host's bug: reported, and the widget goes on
    }
  }
  const failed = (operation: EndpointId, error: ClientError<EndpointId>) => emit("hearken:error", { _tag: error._tag, operation })

  // The boards and the messages are fetched together; the widget renders once it has its words.
  const firstBoards = client.boards({ organizationId })
  const requested = resolve(options.locale, options.messages !== undefined)
  let stopTheme = () => {}
  let scheduler: SuggestionScheduler | undefined

  const mount = async () => {
    // The accent's contrast code, like a language, is fetched only when used.
    const accent = options.accent
    const [loaded, paintAccent] = await Promise.all([
      load(requested.catalog),
      accent === undefined ? undefined
        : importSibling<typeof import("./accent.js")>("accent.js").then((module) => module?.accentPainter(accent))
    ])
    if (destroyed) return
    const language = loaded === undefined ? resolve("en", false) : requested // the file could not be loaded: English
    // English under the file: one from another deploy (cached apart from widget.js) may lack a key.
    const t = translator(merge(merge(en, loaded), options.messages), language.tag)
    /** The server writes its field messages in English: shown as they are only in an English widget. */
    const english = new Intl.Locale(language.tag).language === "en"

    /** A readable sentence for an error that is not about one field. */
    const describe = (error: ClientError<EndpointId>): string => {
      switch (error._tag) {
        case "NetworkError":
          return t("unreachable")
        case "RateLimitExceededError":
        case "RateLimitUnavailableError":
          return t("busy", { seconds: error.retryAfterSeconds })
        case "UnauthorizedError":
          return t("unauthorized")
        case "NotFoundError":
          return t("notFound")
        case "DataValidationError":
          return english && error.message ? error.message : t("checkForm")
        default:
          return t("failed")
      }
    }

    // ---------------------------------------------------------- skeleton

    const tab = (name: string, label: string, selected: boolean) =>
      h("button", {
        type: "button",
        role: "tab",
        id: id(`tab-${name}`),
        "aria-controls": id(`panel-${name}`),
        "aria-selected": String(selected),
        tabindex: selected ? "0" : "-1"
      }, label)
    const tabs = [tab("post", t("tabPost"), true), tab("updates", t("tabUpdates"), false)]
    const tablist = h("div", { role: "tablist", "aria-label": t("tabs") }, ...tabs)
    /** Failures that concern the whole widget (network, CORS, busy): announced at once. */
    const alert = h("div", { class: "alert", role: "alert" })

    const loadingBoards = () => h("span", { class: "muted" }, t("loadingBoards"))
    const boardList = h("div", { class: "boards" }, loadingBoards())
    const boardError = h("p", { class: "error", id: id("board-error") })
    const boards = h("fieldset", { "aria-describedby": id("board-error") }, h("legend", {}, t("board")), boardList, boardError)

    const field = (name: "title" | "content", label: string, control: HTMLInputElement | HTMLTextAreaElement) => {
      control.id = id(name)
      control.name = name
      control.setAttribute("aria-describedby", id(`${name}-error`))
      return h("div", { class: "field" }, h("label", { for: control.id }, label), control,
        h("p", { class: "error", id: id(`${name}-error`) }))
    }
    // No maxlength: browsers count UTF-16 units, the server counts code points (200 emoji make a valid title) and says which field is too long.
    // `dir="auto"` on what the visitor types and on what the API answers: an English title reads left to right in an Arabic widget.
    const title = h("input", { type: "text", autocomplete: "off", required: true, dir: "auto" })
    const content = h("textarea", { rows: "4", dir: "auto" })
    /** Similar posts; polite, so a screen reader hears them after the visitor stops typing. */
    const similar = h("div", { class: "similar", "aria-live": "polite", id: id("similar") })
    const submit = h("button", { type: "submit", class: "primary" }, t("submit"))
    const form = h("form", { novalidate: true, "aria-labelledby": id("form-title") },
      h("h2", { id: id("form-title") }, t("formTitle")),
      boards,
      field("title", t("title"), title),
      field("content", t("details"), content),
      similar,
      submit)
    /** The success message; a status region, so it is announced without moving focus. */
    const success = h("div", { class: "success", role: "status", id: id("success") })
    const again = h("button", { type: "button", class: "secondary", hidden: true }, t("sendMore"))
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

    const widget = h("div", { class: "hk", lang: language.tag, dir: language.dir },
      tablist, alert, postPanel, updatesPanel)
    root.append(h("style", {}, css), widget)
    const theme = options.theme === "dark" || options.theme === "auto" ? options.theme : "light"
    stopTheme = applyTheme(widget, theme, paintAccent)

    const showAlert = (message: string) => {
      alert.textContent = message
    }

    // ---------------------------------------------------------- tabs (WAI-ARIA tabs, automatic activation)

    const panels = [postPanel, updatesPanel]
    const select = (index: number, focus: boolean) => {
      tabs.forEach((tab, i) => {
        tab.setAttribute("aria-selected", String(i === index))
        tab.tabIndex = i === index ? 0 : -1
        panels[i]!.hidden = i !== index
      })
      if (focus) tabs[index]!.focus()
      if (index === 1) void loadUpdates()
    }
    tabs.forEach((tab, i) => tab.addEventListener("click", () => select(i, false)))
    tablist.addEventListener("keydown", (event) => {
      const current = tabs.findIndex((tab) => tab.getAttribute("aria-selected") === "true")
      // Arrows follow the reading direction: in a right-to-left layout the next tab is on the left.
      const forward = language.dir === "rtl" ? "ArrowLeft" : "ArrowRight"
      const back = language.dir === "rtl" ? "ArrowRight" : "ArrowLeft"
      const next = event.key === forward ? current + 1
        : event.key === back ? current - 1
        : event.key === "Home" ? 0
        : event.key === "End" ? tabs.length - 1
        : undefined
      if (next === undefined) return
      event.preventDefault()
      select((next + tabs.length) % tabs.length, true)
    })

    // ---------------------------------------------------------- boards

    let boardsCache: { etag: string; value: ReadonlyArray<Board> } | undefined
    const selectedBoard = (): string =>
      boardList.querySelector<HTMLInputElement>("input:checked")?.value ?? ""

    const renderBoards = (list: ReadonlyArray<Board>) => {
      if (list.length === 0) {
        boardList.replaceChildren(h("span", { class: "muted" }, t("noBoards")))
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
        return h("label", { class: "board" }, radio, h("span", { dir: "auto" }, board.name))
      }))
    }

    const loadBoards = async (pending = client.boards({ organizationId }, { ifNoneMatch: boardsCache?.etag })) => {
      const answer = await pending
      if (!answer.ok) {
        const retry = h("button", { type: "button", class: "secondary" }, t("retry"))
        retry.addEventListener("click", () => {
          showAlert("")
          boardList.replaceChildren(loadingBoards())
          void loadBoards()
        })
        boardList.replaceChildren(h("span", { class: "muted" }, t("boardsFailed")), retry)
        showAlert(describe(answer.error))
        failed("boards", answer.error)
        return
      }
      if (!("notModified" in answer)) {
        if (answer.etag !== undefined) boardsCache = { etag: answer.etag, value: answer.value }
        renderBoards(answer.value)
      }
    }

    // ---------------------------------------------------------- field errors

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
    const showFieldError = (name: Field, text: string) => {
      controls[name].setAttribute("aria-invalid", "true")
      errorOf(name).textContent = text
      ;(name === "boardId" ? boardList.querySelector("input") ?? boards : controls[name]).focus()
    }
    /**
     * `DataValidationError` messages start with the field: "title: Expected …".
     * The server writes them in English: another language shows its own "check this field".
     */
    const showValidation = (message: string): boolean => {
      const match = /^(\w+): (.*)$/s.exec(message)
      const name = match?.[1]
      if (match === null || name === undefined || !(name in controls)) return false
      const text = match[2]!
      showFieldError(name as Field, english ? text.charAt(0).toUpperCase() + text.slice(1) : t("fieldInvalid"))
      return true
    }

    // ---------------------------------------------------------- suggestions

    const draft = () => ({ organizationId, boardId: selectedBoard(), title: title.value.trim(), content: textToHtml(content.value) })
    /** The draft's identity, or undefined when there is nothing worth asking about (or no widget any more). */
    const draftKey = (d = draft()) =>
      !destroyed && d.boardId !== "" && d.title.length >= 3 ? JSON.stringify([d.boardId, d.title, d.content]) : undefined

    const suggestionItem = (s: Suggestion) => {
      const name = h("strong", { dir: "auto" }, s.title)
      const url = linkOf(options.postUrl, s)
      const excerpt = s.excerpt ? h("span", { class: "muted", dir: "auto" }, s.excerpt) : ""
      if (url === undefined) return h("li", {}, name, excerpt)
      const link = h("a", { href: url, target: "_blank", rel: "noopener" }, name, h("span", { class: "sr" }, ` ${t("newTab")}`))
      const selected = (event: MouseEvent) => {
        if (event.type === "click" || event.button === 1) emit("hearken:suggestion-selected", { id: s.id, slug: s.slug, url })
      }
      link.addEventListener("click", selected)
      link.addEventListener("auxclick", selected)
      return h("li", {}, link, excerpt)
    }

    const renderSuggestions = (boardId: string, list: ReadonlyArray<Suggestion>) => {
      similar.replaceChildren(...list.length === 0 ? [] : [
        h("h3", {}, t("similar", { count: list.length })),
        h("ul", {}, ...list.map(suggestionItem))
      ])
      emit("hearken:suggestions", { count: list.length, boardId, posts: list.map((s) => ({ id: s.id, slug: s.slug })) })
    }

    scheduler = new SuggestionScheduler({
      draftKey: () => draftKey(),
      request: async () => {
        const asked = draft()
        const key = draftKey(asked)
        const answer = await client.suggestions(asked)
        // The draft changed while the answer travelled (typed on, sent, or the widget destroyed): it answers nothing shown.
        if (answer.ok && key !== draftKey()) return undefined
        if (answer.ok) {
          renderSuggestions(asked.boardId, answer.value)
          return undefined
        }
        failed("suggestions", answer.error)
        // 429 and 503: wait quietly for Retry-After; anything else leaves the list as it was.
        return "retryAfterSeconds" in answer.error ? answer.error.retryAfterSeconds : undefined
      }
    })
    const onDraftChange = () => {
      // A draft too short to ask about shows no stale list.
      if (draft().title.length < 3) similar.replaceChildren()
      scheduler!.changed()
    }

    // ---------------------------------------------------------- submitting

    /** One key per draft: a retry or a double click of the same draft sends the same key. */
    let idempotency: { draft: string; key: string } | undefined
    let sending = false

    const submitDraft = async () => {
      if (sending) return
      clearErrors()
      const d = draft()
      if (d.boardId === "") return showFieldError("boardId", t("pickBoard"))
      if (d.title === "") return showFieldError("title", t("titleRequired"))
      const payload = { ...d, ...(token === undefined ? {} : { token }) }
      const fingerprint = JSON.stringify(payload)
      if (idempotency?.draft !== fingerprint) idempotency = { draft: fingerprint, key: uuid() }
      sending = true
      submit.disabled = true
      submit.textContent = t("sending")
      try {
        const answer = await client.feedback(payload, { idempotencyKey: idempotency.key })
        if (answer.ok) {
          idempotency = undefined
          scheduler!.reset()
          form.reset()
          // Keep the board: the next post most likely goes to the same one.
          const kept = boardList.querySelector<HTMLInputElement>(`input[value="${CSS.escape(d.boardId)}"]`)
          if (kept) kept.checked = true
          similar.replaceChildren()
          form.hidden = true
          again.hidden = false
          success.textContent = t("thanks", { title: answer.value.title })
          again.focus()
          emit("hearken:submitted", { id: answer.value.id, slug: answer.value.slug, boardId: answer.value.boardId })
          return
        }
        failed("feedback", answer.error)
        if (answer.error._tag !== "DataValidationError" || !showValidation(answer.error.message ?? "")) {
          showAlert(describe(answer.error))
        }
      } finally {
        sending = false
        submit.disabled = false
        submit.textContent = t("submit")
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

    // ---------------------------------------------------------- changelog (conditional GET)

    let updatesCache: { etag: string | undefined; value: ReadonlyArray<Update> } | undefined
    let loadingUpdates = false
    const dateFormat = new Intl.DateTimeFormat(language.tag, { dateStyle: "long" })

    const renderUpdates = (list: ReadonlyArray<Update>) => {
      updatesStatus.textContent = list.length === 0 ? t("nothingNew") : ""
      updateList.replaceChildren(...list.map((update) => {
        const body = h("div", { class: "content", dir: "auto" })
        body.innerHTML = update.content // sanitized by the server (README: "Rendering answers")
        return h("li", {},
          h("h2", { dir: "auto" }, update.title),
          update.publishedAt === undefined ? ""
            : h("time", { class: "muted", datetime: update.publishedAt }, dateFormat.format(new Date(update.publishedAt))),
          body)
      }))
    }

    const loadUpdates = async () => {
      if (loadingUpdates) return
      loadingUpdates = true
      if (updatesCache === undefined) updatesStatus.textContent = t("loading")
      try {
        const answer = await client.updates({ organizationId }, { ifNoneMatch: updatesCache?.etag })
        if (!answer.ok) {
          updatesStatus.textContent = updatesCache === undefined ? t("updatesFailed") : ""
          showAlert(describe(answer.error))
          failed("updates", answer.error)
          return
        }
        if ("notModified" in answer) return
        updatesCache = { etag: answer.etag, value: answer.value }
        renderUpdates(answer.value)
      } finally {
        loadingUpdates = false
      }
    }

    emit("hearken:ready", { locale: language.tag, dir: language.dir, theme })
    await loadBoards(firstBoards)
  }

  mount().catch(reportError)

  const handle: WidgetHandle = {
    setToken: (next) => {
      token = next
    },
    destroy: () => {
      if (destroyed) return
      destroyed = true
      if (mounted.get(root) === handle) mounted.delete(root)
      scheduler?.reset()
      stopTheme()
      root.replaceChildren()
      if (target === null || target === undefined) host.remove()
    }
  }
  mounted.set(root, handle)
  return handle
}

export const HearkenWidget = { init }

declare global {
  interface Window {
    HearkenWidget: typeof HearkenWidget
  }
}
if (typeof window !== "undefined") window.HearkenWidget = HearkenWidget
