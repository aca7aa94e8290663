/**
 * The widget itself, in a shadow root: tabs, the boards, the draft form with
 * its similar posts, and the changelog. Both ways of embedding it render this:
 * `widget.js` in the host page (`index.ts`) and the frame page served by
 * Hearken (`frame.ts`); they differ only in where events go and where links
 * are resolved.
 *
 * Everything the API answers is plain text (`textContent`) except an update's
 * `content`, which the server has sanitized and which is rendered as HTML.
 */
import { Limits, type ClientError, type EndpointId, type ThinClient } from "@hearken/api/thin"
import { load, merge, resolve, translator, type Language, type Translate } from "./i18n.js"
import { external, h } from "./dom.js"
import { codePoints, linkOf, textToHtml } from "./links.js"
import { en } from "./messages.js"
import type { Board, MountOptions, Suggestion, Update, WidgetEvents } from "./options.js"
import type { SuggestionScheduler } from "./scheduler.js"
import { importSibling } from "./sibling.js"
import css from "./styles.css"
import { applyTheme } from "./theme.js"


let counter = 0

/**
 * A new Idempotency-Key: 128 random bits, as a UUID where `crypto.randomUUID`
 * exists (secure contexts), else as 32 hex digits (any visible ASCII will do).
 */
const newKey = (): string =>
  crypto.randomUUID?.() ?? [...crypto.getRandomValues(new Uint8Array(16))].map((n) => n.toString(16).padStart(2, "0")).join("")

/** Only the documented colours, as the host would set them in CSS. */
const variableName = /^--hearken-[a-z-]+$/

export interface Mounted {
  readonly setToken: (token: string | undefined) => void
  /** Moves focus to the selected tab (when a launcher opens the widget). */
  readonly focus: () => void
  readonly destroy: () => void
}

/**
 * Renders the widget into `root` (emptied first) and starts loading its
 * boards. `onLanguage` hears the language, the translator and the widget's
 * element once it is rendered (a launcher labels its button with them, and
 * takes the accent as painted: `launcher.ts`).
 */
export const mount = (
  root: ShadowRoot,
  client: ThinClient,
  options: MountOptions,
  emitTo: <K extends keyof WidgetEvents>(type: K, detail: WidgetEvents[K]) => void,
  onLanguage?: (language: Language, t: Translate, widget: HTMLElement) => void
): Mounted => {
  const { organizationId } = options
  let token = options.token
  root.replaceChildren()
  const id = (name: string) => `hk${counter}-${name}`
  counter++

  let destroyed = false
  const emit: typeof emitTo = (type, detail) => {
    if (!destroyed) emitTo(type, detail) // not for an answer that arrives after `destroy`
  }
  const failed = (operation: EndpointId, error: ClientError<EndpointId>) => emit("hearken:error", { _tag: error._tag, operation })

  // The boards and the messages are fetched together; the widget renders once it has its words.
  const firstBoards = client.boards({ organizationId })
  const requested = resolve(options.locale, options.messages !== undefined, options.pageLang)
  let stopTheme = () => {}
  let scheduler: SuggestionScheduler | undefined
  let focusFirst = () => {}

  const render = async () => {
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
      control.setAttribute("aria-describedby", `${id(`${name}-error`)} ${id(`${name}-count`)}`)
      return h("div", { class: "field" }, h("label", { for: control.id }, label), control,
        h("p", { class: "error", id: id(`${name}-error`) }),
        h("p", { class: "muted count", id: id(`${name}-count`) }))
    }
    // No maxlength: browsers count UTF-16 units, the server counts code points (200 emoji make a valid title).
    // The limits are checked here, in code points, against the table the API's schemas use.
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
    for (const [name, value] of Object.entries(options.variables ?? {})) {
      if (variableName.test(name) && typeof value === "string") widget.style.setProperty(name, value)
    }
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
    focusFirst = () => tabs.find((tab) => tab.tabIndex === 0)?.focus()
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
      // The board the visitor picked, else the host's `boardId`, else the only one.
      // (A `boardId` no longer listed is ignored: with one board left, that one is chosen.)
      const previous = selectedBoard() || list.find((board) => board.id === options.boardId)?.id || (list.length === 1 ? list[0]!.id : "")
      boardList.replaceChildren(...list.map((board) => {
        const radio = h("input", { type: "radio", name: id("board"), value: board.id })
        radio.checked = board.id === previous
        radio.addEventListener("change", () => {
          clearError("boardId")
          onDraftChange()
        })
        return h("label", { class: "board" }, radio, h("span", { dir: "auto" }, board.name))
      }))
      // One board: nothing to choose.
      boards.hidden = list.length === 1
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

    const loadBoards = async (pending = client.boards({ organizationId }, { ifNoneMatch: boardsCache?.etag })) => {
      const answer = await pending
      if (!answer.ok) {
        failed("boards", answer.error)
        if (answer.error._tag === "NetworkError" && await refusedOrigin()) {
          // Nothing the visitor can do: no "Try again". The site owner reads the console.
          console.error(`Hearken: CORS refuses ${location.origin}; /widget/embed.js works on any site`)
          boards.hidden = true
          form.hidden = true
          showAlert(t("unavailable"))
          return
        }
        const retry = h("button", { type: "button", class: "secondary" }, t("retry"))
        retry.addEventListener("click", () => {
          showAlert("")
          boardList.replaceChildren(loadingBoards())
          void loadBoards()
        })
        boardList.replaceChildren(h("span", { class: "muted" }, t("boardsFailed")), retry)
        showAlert(describe(answer.error))
        return
      }
      if (!("notModified" in answer)) {
        if (answer.etag !== undefined) boardsCache = { etag: answer.etag, value: answer.value }
        renderBoards(answer.value)
      }
    }

    // ---------------------------------------------------------- field errors and limits

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
    const markInvalid = (name: Field, text: string) => {
      controls[name].setAttribute("aria-invalid", "true")
      errorOf(name).textContent = text
    }
    const showFieldError = (name: Field, text: string) => {
      markInvalid(name, text)
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

    const draft = () => ({ organizationId, boardId: selectedBoard(), title: title.value.trim(), content: textToHtml(content.value) })
    type Draft = ReturnType<typeof draft>
    const limited = ["title", "content"] as const
    /** The first field over its limit (the API's own table, in code points, as the API counts), if any. */
    const overLimit = (d: Draft) => limited.find((name) => codePoints(d[name]) > Limits[name])

    /** A live count once a field nears its limit (80 %), and the limit named in the visitor's language past it. */
    const showLimits = () => {
      const d = draft()
      for (const name of limited) {
        const used = codePoints(d[name])
        const limit = Limits[name]
        root.getElementById(id(`${name}-count`))!.textContent = used >= limit * 0.8 && used <= limit ? t("charsLeft", { count: limit - used }) : ""
        if (used > limit) markInvalid(name, t("tooLong", { count: limit }))
        else clearError(name)
      }
    }

    // ---------------------------------------------------------- suggestions

    /** The draft's identity, or undefined when there is nothing worth asking about (or no widget any more). */
    const draftKey = (d = draft()) =>
      !destroyed && d.boardId !== "" && d.title.length >= 3 && overLimit(d) === undefined
        ? JSON.stringify([d.boardId, d.title, d.content]) : undefined

    const linkFor = (post: Suggestion) => linkOf(options.postUrl, post, options.linkBase)

    /** Suggestions are their own module (`suggestions.js`), fetched when the visitor first types: the first download stays small. */
    let loadingSuggester: Promise<unknown> | undefined
    const schedule = () => {
      if (scheduler !== undefined) return scheduler.changed()
      loadingSuggester ??= importSibling<typeof import("./suggestions.js")>("suggestions.js").then((module) => {
        if (destroyed || module === undefined) return // no suggestions; posting works without them
        scheduler = module.suggester({ client, draft, draftKey, similar, t, emit, failed, linkFor })
        scheduler.changed()
      })
    }
    const onDraftChange = () => {
      // A draft too short (or too long) to ask about shows no stale list.
      if (draftKey() === undefined) similar.replaceChildren()
      schedule()
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
      const over = overLimit(d)
      if (over !== undefined) return showFieldError(over, t("tooLong", { count: Limits[over] }))
      const payload = { ...d, ...(token === undefined ? {} : { token }) }
      const fingerprint = JSON.stringify(payload)
      if (idempotency?.draft !== fingerprint) idempotency = { draft: fingerprint, key: newKey() }
      sending = true
      submit.disabled = true
      submit.textContent = t("sending")
      try {
        const answer = await client.feedback(payload, { idempotencyKey: idempotency.key })
        if (answer.ok) {
          const post = answer.value
          idempotency = undefined
          scheduler?.reset()
          form.reset()
          showLimits()
          // Keep the board: the next post most likely goes to the same one.
          const kept = boardList.querySelector<HTMLInputElement>(`input[value="${CSS.escape(d.boardId)}"]`)
          if (kept) kept.checked = true
          similar.replaceChildren()
          form.hidden = true
          again.hidden = false
          const url = linkFor({ id: post.id, slug: post.slug, title: post.title, excerpt: "" })
          success.replaceChildren(t("thanks", { title: post.title }), ...url === undefined ? [] : [" ", external(url, t, t("viewPost"))])
          again.focus()
          emit("hearken:submitted", { id: post.id, slug: post.slug, boardId: post.boardId })
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
        showLimits()
        onDraftChange()
      })
    }
    again.addEventListener("click", () => {
      success.textContent = ""
      again.hidden = true
      form.hidden = false
      title.focus()
    })

    // ---------------------------------------------------------- changelog: its own module, fetched when the tab is first opened

    let changelog: (() => Promise<void>) | undefined
    const loadUpdates = async () => {
      if (changelog === undefined) {
        updatesStatus.textContent = t("loading")
        const module = await importSibling<typeof import("./updates.js")>("updates.js")
        if (module === undefined) {
          updatesStatus.textContent = t("updatesFailed")
          return
        }
        changelog ??= module.changelog({ client, options, t, tag: language.tag, status: updatesStatus, list: updateList, showAlert, describe, failed })
      }
      await changelog()
    }

    onLanguage?.(language, t, widget)
    emit("hearken:ready", { locale: language.tag, dir: language.dir, theme })
    await loadBoards(firstBoards)
  }

  render().catch(reportError)

  return {
    setToken: (next) => {
      token = next
    },
    focus: () => focusFirst(),
    destroy: () => {
      if (destroyed) return
      destroyed = true
      scheduler?.reset()
      stopTheme()
      root.replaceChildren()
    }
  }
}
