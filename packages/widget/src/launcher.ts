/**
 * `mode: "launcher"`: a floating button in a bottom corner that opens the
 * widget in a popover above it. The corner is logical (`start` or `end`), so
 * it mirrors in a right-to-left language. Escape, a click outside and the
 * button close it; opening moves focus into the widget, and closing with the
 * keyboard moves it back to the button. Shared by `widget.js` (the widget in
 * the popover) and `embed.js` (the frame in the popover), in a shadow root of
 * its own so the host's styles stay out.
 */
const style =
  ":host{all:initial;position:fixed;z-index:2147483000;bottom:20px;inset-inline:auto 20px;font:600 15px/1.2 system-ui,sans-serif}" +
  ":host([data-position=start]){inset-inline:20px auto}" +
  ".pop{position:absolute;bottom:calc(100% + 12px);inset-inline:auto 0;width:min(28rem,calc(100vw - 40px));max-height:calc(100vh - 110px);overflow:auto;border-radius:12px;box-shadow:0 8px 28px #0003}" +
  ":host([data-position=start]) .pop{inset-inline:0 auto}" +
  "[hidden]{display:none!important}" +
  "button{font:inherit;color:var(--hearken-on-accent,#fff);background:var(--hearken-accent,#4338ca);border:0;border-radius:99px;padding:.8em 1.3em;cursor:pointer;box-shadow:0 4px 14px #0004;white-space:nowrap}" +
  "button:focus-visible{outline:3px solid var(--hearken-accent,#4338ca);outline-offset:3px}"

/** The widget's accent and the text on it, as painted (the `accent` option, the theme): the button matches the widget. */
export const colorsOf = (widget: Element): readonly [string, string] => {
  const painted = getComputedStyle(widget)
  return [painted.getPropertyValue("--accent").trim(), painted.getPropertyValue("--on-accent").trim()]
}

export interface Launcher {
  /** The element to mount in the page; the widget (or the frame) goes inside it, in its slot. */
  readonly host: HTMLElement
  /**
   * Shows the button, named in the widget's language; `dir` mirrors the
   * corner; `colors`: `colorsOf` the widget.
   */
  readonly label: (text: string, dir: string, colors: ReadonlyArray<string>) => void
  readonly open: () => void
  /** `restore`: focus goes back to the button (Escape, the button); not after a click elsewhere on the page. */
  readonly close: (restore?: boolean) => void
  readonly destroy: () => void
}

export const launcher = (
  position: string | undefined,
  onToggle: (open: boolean) => void,
  focusInside: () => void
): Launcher => {
  const host = document.createElement("div")
  const root = host.attachShadow({ mode: "open" })
  host.dataset["position"] = position === "start" ? "start" : "end"
  // A constructed stylesheet, not a <style>: a host page whose CSP refuses inline styles still draws the button.
  const sheet = new CSSStyleSheet()
  sheet.replaceSync(style)
  root.adoptedStyleSheets = [sheet]
  const pop = document.createElement("div")
  pop.className = "pop"
  pop.id = "pop"
  pop.hidden = true
  pop.append(document.createElement("slot"))
  // (No `type`: in a shadow root it belongs to no form of the page.)
  const button = document.createElement("button")
  button.hidden = true // until it has a label in the widget's language
  button.setAttribute("aria-expanded", "false")
  button.setAttribute("aria-controls", "pop")
  root.append(pop, button)

  const open = () => {
    if (!pop.hidden) return
    pop.hidden = false
    button.setAttribute("aria-expanded", "true")
    focusInside()
    onToggle(true)
  }
  const close = (restore = true) => {
    if (pop.hidden) return
    pop.hidden = true
    button.setAttribute("aria-expanded", "false")
    if (restore) button.focus()
    onToggle(false)
  }
  button.onclick = () => pop.hidden ? open() : close()
  // Escape anywhere in the widget in the page (a frame sends its own: see embed.ts).
  host.addEventListener("keydown", (event) => {
    if (event.key === "Escape") close()
  })
  const outside = (event: Event) => {
    if (!event.composedPath().includes(host)) close(false)
  }
  document.addEventListener("pointerdown", outside)
  return {
    host,
    label: (text, dir, [accent, onAccent]) => {
      button.textContent = text
      host.dir = dir
      if (accent && onAccent) host.style.cssText = `--hearken-accent:${accent};--hearken-on-accent:${onAccent}`
      button.hidden = false
    },
    open,
    close,
    destroy: () => {
      document.removeEventListener("pointerdown", outside)
      host.remove()
    }
  }
}
