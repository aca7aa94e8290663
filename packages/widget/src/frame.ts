/**
 * The frame page's script (`/widget/frame` loads `frame.js`): the widget on
 * Hearken's own origin, so its API calls are same-origin and need no CORS
 * setting, on any site. `embed.js` in the host page creates the frame with
 * the page's origin in its URL (`#origin=…`); the frame talks only to its
 * parent window, and only at that origin: a message from anywhere else is
 * ignored, and what it sends cannot be read by any other page.
 */
import { makeThinClient } from "@hearken/api/thin"
import { colorsOf } from "./launcher.js"
import type { Emit } from "./emitter.js"
import { originParameter, type FromFrame, type ToFrame } from "./protocol.js"
import { mount, type Mounted } from "./ui.js"

const hostOrigin = new URLSearchParams(location.hash.slice(1)).get(originParameter)

if (hostOrigin !== null && window.parent !== window) {
  const send = (message: FromFrame) => window.parent.postMessage(message, hostOrigin)
  const host = document.body.appendChild(document.createElement("div"))
  document.body.style.margin = "0"
  let ui: Mounted | undefined

  addEventListener("message", (event: MessageEvent<ToFrame>) => {
    if (event.source !== window.parent || event.origin !== hostOrigin) return
    const message = event.data
    if (typeof message !== "object" || message === null) return
    if (message.hearken === "init" && ui === undefined && typeof message.options?.organizationId === "string") {
      const emit: Emit = (type, detail) => send({ hearken: "event", type, detail })
      ui = mount(host.attachShadow({ mode: "open" }), makeThinClient(location.origin), message.options, emit,
        (language, t, widget) => {
          // The frame's document is in the widget's language too (screen readers, axe's `html-has-lang`).
          document.documentElement.lang = language.tag
          document.title = t("tabs")
          send({ hearken: "ready", label: t("launcher"), dir: language.dir, colors: colorsOf(widget) })
        })
    } else if (message.hearken === "token" && (typeof message.token === "string" || message.token === undefined)) {
      ui?.setToken(message.token)
    } else if (message.hearken === "focus") {
      ui?.focus()
    }
  })
  addEventListener("keydown", (event) => {
    if (event.key === "Escape") send({ hearken: "escape" })
  })
  // The host sizes the frame to the widget: no inner scroll bar, no gap.
  new ResizeObserver(() => send({ hearken: "height", height: Math.ceil(host.getBoundingClientRect().height) })).observe(host)
  send({ hearken: "hello" })
}
