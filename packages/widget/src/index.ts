/**
 * Hearken's feedback widget in the host page (`widget.js`), for the origins
 * the API allows: the dashboard and subdomains of `ROOT_DOMAIN`. Any other
 * site embeds the frame instead (`embed.js`), with the same options.
 *
 *   <div id="hearken"></div>
 *   <script type="module">
 *     import { HearkenWidget } from "https://YOUR-HEARKEN/widget/widget.js"
 *     HearkenWidget.init({ organizationId: "org_…", target: "#hearken" })
 *   </script>
 *
 * The widget itself is `ui.ts`; this file places it (inline, or behind a
 * launcher) and delivers its events to the host (`emitter.ts`).
 */
import { makeThinClient } from "@hearken/api/thin"
import type { Launcher } from "./launcher.js"
import { domEvents } from "./emitter.js"
import { targetOf, type InitOptions, type WidgetHandle } from "./options.js"
import { importSibling } from "./sibling.js"
import { mount } from "./ui.js"

export type { Messages, Plural } from "./messages.js"
export type { MessageOverrides } from "./i18n.js"
export type { Theme } from "./theme.js"
export type { InitOptions, Suggestion, WidgetEvent, WidgetEvents, WidgetHandle } from "./options.js"
export { linkOf, textToHtml } from "./links.js"

/** The widget on each target: `init` on a target that has one replaces it (inline or launcher). */
const mounted = new WeakMap<object, WidgetHandle>()

const scriptOrigin = (): string => new URL(import.meta.url).origin

const init = (options: InitOptions): WidgetHandle => {
  const base = options.baseUrl ?? scriptOrigin()
  const target = targetOf(options.target)
  /** What a later `init` replaces this widget by: its target, else its own element. */
  const key: object = target ?? {}
  mounted.get(key)?.destroy()
  /** `mode: "launcher"`: its code is its own module (`launcher.js`), fetched only then. */
  let bar: Launcher | undefined
  let wantOpen = false
  let label: [string, string, HTMLElement] | undefined
  let colorsOf: typeof import("./launcher.js").colorsOf
  const setLabel = () => bar!.label(label![0], label![1], colorsOf(label![2]))
  const container = target ?? document.body
  /** Where the events go: the target, else the element the widget is in. */
  let eventHost: Element
  const host = document.createElement("div")
  /** Keeps the launcher's place in the page until its module is here. */
  const holder = document.createElement("div")
  if (options.mode === "launcher") {
    container.append(holder)
    eventHost = target ?? holder
    void importSibling<typeof import("./launcher.js")>("launcher.js").then((module) => {
      if (destroyed || module === undefined) return
      colorsOf = module.colorsOf
      bar = module.launcher(options.position, (open) => emit(open ? "hearken:open" : "hearken:close", {}), () => ui.focus())
      bar.host.append(host)
      holder.replaceWith(bar.host)
      if (target === undefined) eventHost = bar.host
      if (label) setLabel()
      if (wantOpen) bar.open()
    })
  } else {
    if (target === undefined) document.body.append(host)
    eventHost = target ?? host
  }
  const widgetHost = options.mode === "launcher" || target === undefined ? host : target
  const root = widgetHost.shadowRoot ?? widgetHost.attachShadow({ mode: "open" })

  let destroyed = false
  const emit = domEvents(() => eventHost, options.onEvent, () => !destroyed)
  const ui = mount(root, makeThinClient(base), {
    ...options,
    linkBase: document.baseURI,
    probeUrl: new URL("/widget/embed.js", base).href
  }, emit, (language, t, widget) => {
    label = [t("launcher"), language.dir, widget]
    if (bar) setLabel()
  })

  const handle: WidgetHandle = {
    setToken: ui.setToken,
    open: () => {
      wantOpen = true
      bar?.open()
    },
    close: () => {
      wantOpen = false
      bar?.close(false) // from code: focus stays where it is
    },
    destroy: () => {
      if (destroyed) return
      ui.destroy()
      destroyed = true
      if (mounted.get(key) === handle) mounted.delete(key)
      bar?.destroy()
      host.remove()
      holder.remove()
    }
  }
  mounted.set(key, handle)
  return handle
}

export const HearkenWidget = { init }

declare global {
  interface Window {
    HearkenWidget: typeof HearkenWidget
  }
}
if (typeof window !== "undefined") window.HearkenWidget = HearkenWidget
