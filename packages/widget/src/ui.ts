/**
 * The widget itself, in a shadow root: tabs (`tabs.ts`), the boards
 * (`boards.ts`), the draft form (`form.ts`, run by `controller.ts`) with its
 * similar posts (`suggestions.ts`), and the changelog (`updates.ts`). Both
 * ways of embedding it render this: `widget.js` in the host page
 * (`index.ts`) and the frame page served by Hearken (`frame.ts`); they
 * differ only in where events go (`emitter.ts`) and where links are resolved.
 *
 * Everything the API answers is plain text (`textContent`) except an update's
 * `content`, which the server has sanitized and which is rendered as HTML.
 */
// The bundle follows this order, and gzip compresses widget.js best in it (its 8 KB budget: bench/sizes.ts).
import type { ThinClient } from "@hearken/api/thin"
import type { Context } from "./context.js"
import type { MountOptions } from "./options.js"
import { h } from "./dom.js"
import { importSibling } from "./sibling.js"
import { en } from "./messages.js"
import { describe } from "./checks.js"
import { load, merge, resolve, translator, type Language, type Translate } from "./i18n.js"
import { tabs } from "./tabs.js"
import { emitter, type Emit } from "./emitter.js"
import { controller } from "./controller.js"
import { applyTheme } from "./theme.js"
import css from "./styles.css"
import { linkOf } from "./links.js"

let counter = 0

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
  emitTo: Emit,
  onLanguage?: (language: Language, t: Translate, widget: HTMLElement) => void
): Mounted => {
  let token = options.token
  root.replaceChildren()
  const prefix = `hk${counter++}-`
  let destroyed = false
  const live = () => !destroyed
  const events = emitter(emitTo, live)

  // The boards and the messages are fetched together; the widget renders once it has its words.
  const firstBoards = client.boards({ organizationId: options.organizationId })
  const requested = resolve(options.locale, options.messages !== undefined, options.pageLang)
  let stopTheme = () => {}
  let stopPost = () => {}
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
    const english = new Intl.Locale(language.tag).language === "en"
    /** Failures that concern the whole widget (network, CORS, busy): announced at once. */
    const alert = h("div", { class: "alert", role: "alert" })
    const c: Context = {
      ...events,
      live,
      client,
      options,
      language,
      t,
      english,
      id: (name) => prefix + name,
      alert: (what) => {
        alert.textContent = typeof what === "string" ? what : describe(what, t, english)
      },
      linkFor: (post) => linkOf(options.postUrl, post, options.linkBase)
    }

    const [postPanel, loadBoards, stop] = controller(c, () => token)
    stopPost = stop

    // The changelog: its own module, fetched when the tab is first opened.
    const updateList = h("ul", { class: "updates" })
    const updatesStatus = h("p", { class: "muted", role: "status" })
    const updatesPanel = h("section", {
      role: "tabpanel",
      id: c.id("panel-updates"),
      "aria-labelledby": c.id("tab-updates"),
      tabindex: "0"
    }, updatesStatus, updateList)
    let changelog: (() => Promise<void>) | undefined
    const loadUpdates = async () => {
      if (changelog === undefined) {
        updatesStatus.textContent = t("loading")
        const module = await importSibling<typeof import("./updates.js")>("updates.js")
        if (module === undefined) {
          updatesStatus.textContent = t("updatesFailed")
          return
        }
        changelog ??= module.changelog(c, updatesStatus, updateList)
      }
      await changelog()
    }

    const [tabList, focusTab] = tabs(c, [postPanel, updatesPanel], (index) => {
      if (index === 1) void loadUpdates()
    })
    focusFirst = focusTab
    const widget = h("div", { class: "hk", lang: language.tag, dir: language.dir },
      tabList, alert, postPanel, updatesPanel)
    for (const [name, value] of Object.entries(options.variables ?? {})) {
      if (variableName.test(name) && typeof value === "string") widget.style.setProperty(name, value)
    }
    root.append(h("style", {}, css), widget)
    const theme = options.theme === "dark" || options.theme === "auto" ? options.theme : "light"
    stopTheme = applyTheme(widget, theme, paintAccent)

    onLanguage?.(language, t, widget)
    c.emit("hearken:ready", { locale: language.tag, dir: language.dir, theme })
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
      destroyed = true // no event after this, even for an answer on its way
      stopPost()
      stopTheme()
      root.replaceChildren()
    }
  }
}
