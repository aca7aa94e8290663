/**
 * `embed.js`: the widget on any site, in a frame served by Hearken. A classic
 * script, two lines in any page:
 *
 *   <div id="hearken"></div>
 *   <script src="https://YOUR-HEARKEN/widget/embed.js" data-organization-id="org_…" data-target="#hearken"></script>
 *
 * or `HearkenWidget.init({ … })` with the options of `widget.js`. It creates
 * an `<iframe>` of `/widget/frame`, sends it the options, sizes it to the
 * widget, and dispatches the frame's events on the host element and to
 * `onEvent`. Messages are accepted only from that frame's window at Hearken's
 * origin (protocol.ts).
 */
import { launcher, type Launcher } from "./launcher.js"
import { targetOf, type InitOptions, type WidgetEvent, type WidgetHandle } from "./options.js"
import { originParameter, type FromFrame, type ToFrame } from "./protocol.js"

const script = document.currentScript as HTMLScriptElement | null
const scriptUrl = script?.src || location.href

/** The widget on each target: `init` on a target that has one replaces it, as `widget.js` does. */
const mounted = new WeakMap<Element, WidgetHandle>()

const init = (options: InitOptions): WidgetHandle => {
  const frameUrl = new URL(options.baseUrl === undefined ? "frame" : "/widget/frame", options.baseUrl ?? scriptUrl)
  const frameOrigin = frameUrl.origin
  frameUrl.hash = `${originParameter}=${encodeURIComponent(location.origin)}`
  const target = targetOf(options.target)
  if (target) mounted.get(target)?.destroy()
  const frame = document.createElement("iframe")
  frame.title = "Feedback" // until the frame names it in its language
  frame.src = frameUrl.href
  frame.style.cssText = "display:block;border:0;width:100%;max-width:28rem;height:0;color-scheme:normal"
  let bar: Launcher | undefined
  let host: Element
  if (options.mode === "launcher") {
    bar = launcher(options.position, (open) => emit({ type: open ? "hearken:open" : "hearken:close", detail: {} }), () => {
      frame.focus()
      post({ hearken: "focus" })
    })
    bar.host.append(frame)
    ;(target ?? document.body).append(bar.host)
    host = target ?? bar.host
  } else {
    host = target ?? document.body.appendChild(document.createElement("div"))
    host.append(frame)
  }
  let token = options.token
  let destroyed = false
  /**
   * As plain data (JSON): a function, a proxy or an `Intl.Locale` among the
   * options would make `postMessage` throw; here it is dropped, and the frame
   * ignores what is then not a string, as `widget.js` does.
   */
  const post = (message: ToFrame) => destroyed || frame.contentWindow?.postMessage(JSON.parse(JSON.stringify(message)), frameOrigin)
  const emit = (event: WidgetEvent) => {
    if (destroyed) return
    host.dispatchEvent(new CustomEvent(event.type, { detail: event.detail, bubbles: true, composed: true }))
    try {
      options.onEvent?.(event)
    } catch (error) {
      reportError(error)
    }
  }
  if (typeof options.postUrl === "function") {
    console.warn("Hearken: embed.js takes postUrl as a template")
  }
  const listener = (event: MessageEvent<FromFrame>) => {
    const message = event.data
    if (event.source !== frame.contentWindow || event.origin !== frameOrigin || typeof message !== "object" || message === null) return
    if (message.hearken === "hello") {
      // The options as data: `post` drops the functions (`onEvent`, a `postUrl` function).
      post({ hearken: "init", options: { ...options, token, linkBase: document.baseURI, pageLang: document.documentElement.lang } })
    } else if (message.hearken === "height" && message.height > 0 && message.height < 1e5) {
      // (0: the frame is hidden in a closed launcher; the popover opens at the last height, not empty.)
      frame.style.height = `${message.height}px`
    } else if (message.hearken === "ready") {
      // A frame from another deploy (cached for minutes) may send less: defaults, never a throw.
      const { dir, colors } = message
      const label = frame.title = String(message.label)
      bar?.label(label, dir, colors || [])
    } else if (message.hearken === "event" && String(message.type).startsWith("hearken:")) {
      emit({ type: message.type, detail: message.detail } as WidgetEvent)
    } else if (message.hearken === "escape") {
      bar?.close()
    }
  }
  addEventListener("message", listener)
  const handle: WidgetHandle = {
    setToken: (next) => {
      token = next
      post({ hearken: "token", token })
    },
    open: () => destroyed || bar?.open(),
    // From code: focus stays where it is.
    close: () => destroyed || bar?.close(false),
    destroy: () => {
      if (destroyed) return
      destroyed = true
      removeEventListener("message", listener)
      bar?.destroy()
      frame.remove()
      if (target === undefined) host.remove()
      else if (mounted.get(target) === handle) mounted.delete(target)
    }
  }
  if (target) mounted.set(target, handle)
  return handle
}

window.HearkenWidget = { init }

// The two-line form: the script's `data-*` attributes are the options (`data-organization-id` → `organizationId`).
if (script?.dataset["organizationId"]) init({ ...script.dataset } as unknown as InitOptions)
