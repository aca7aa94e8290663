/** Building the widget's elements: text is always text, never HTML. */
import type { Translate } from "./i18n.js"

export /** `h("p", { class: "x" }, "text", child)`: an element; strings become text nodes (never HTML). */
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

export /** A link that opens in a new tab, saying so to screen readers. */
const external = (href: string, t: Translate, ...children: Array<Node | string>) =>
  h("a", { href, target: "_blank", rel: "noopener" }, ...children, h("span", { class: "sr" }, ` ${t("newTab")}`))

