import createDOMPurify from "dompurify"
import { Context, Layer } from "effect"
import { JSDOM } from "jsdom"

const textTags = [
  "p", "br", "h1", "h2", "h3", "h4", "h5", "h6", "b", "strong", "i", "em", "u", "s", "strike", "del",
  "code", "pre", "blockquote", "ul", "ol", "li", "a"
]

/** Elements whose boundaries separate words when HTML is flattened to text. */
const blockTags = new Set([
  "P", "BR", "H1", "H2", "H3", "H4", "H5", "H6", "PRE", "BLOCKQUOTE", "UL", "OL", "LI", "DIV", "TR", "TD", "TH"
])

const linkRel = "noopener noreferrer nofollow ugc"
const webUrl = /^https?:\/\//i
const linkUrl = /^(?:https?:|mailto:)/i

export interface SanitizerShape {
  /** Post content: text formatting and links, no images. */
  readonly post: (html: string) => string
  /** Changelog content: as posts, plus `http(s)` images. */
  readonly update: (html: string) => string
  /** Plain text: no tags, entities decoded, whitespace collapsed. */
  readonly text: (html: string) => string
}

/** CONTRACT §6: DOMPurify over jsdom, one instance reused for every call. */
export class Sanitizer extends Context.Service<Sanitizer, SanitizerShape>()("hearken/Sanitizer") {
  static readonly layer = Layer.sync(Sanitizer, () => make())
}

export const make = (): SanitizerShape => {
  const { window } = new JSDOM("")
  const purify = createDOMPurify(window as unknown as Parameters<typeof createDOMPurify>[0])

  purify.addHook("afterSanitizeAttributes", (node) => {
    if (node.nodeName === "A") {
      const href = node.getAttribute("href")
      if (href !== null && !linkUrl.test(href.trim())) node.removeAttribute("href")
      node.setAttribute("rel", linkRel)
    } else if (node.nodeName === "IMG") {
      // DOMPurify lets `data:` through on images by default; only web URLs may load.
      const src = node.getAttribute("src")
      if (src === null || !webUrl.test(src.trim())) node.remove()
    }
  })

  const base = {
    ALLOWED_ATTR: ["href", "src", "alt", "title"],
    ALLOWED_URI_REGEXP: linkUrl,
    ALLOW_DATA_ATTR: false,
    ALLOW_ARIA_ATTR: false,
    FORBID_TAGS: ["style", "script", "iframe"]
  }
  const postConfig = { ...base, ALLOWED_TAGS: textTags }
  const updateConfig = { ...base, ALLOWED_TAGS: [...textTags, "img"] }
  const textConfig = { ALLOWED_TAGS: [...textTags, "div", "tr", "td", "th", "span"], ALLOWED_ATTR: [] as Array<string> }

  const flatten = (node: Node, out: Array<string>) => {
    for (const child of Array.from(node.childNodes)) {
      if (child.nodeType === 3) {
        out.push(child.textContent ?? "")
      } else if (child.nodeType === 1) {
        const block = blockTags.has(child.nodeName)
        if (block) out.push(" ")
        flatten(child, out)
        if (block) out.push(" ")
      }
    }
  }

  return {
    post: (html) => purify.sanitize(html, postConfig),
    update: (html) => purify.sanitize(html, updateConfig),
    text: (html) => {
      const fragment = purify.sanitize(html, { ...textConfig, RETURN_DOM_FRAGMENT: true })
      const out: Array<string> = []
      flatten(fragment, out)
      return out.join("").replace(/\s+/gu, " ").trim()
    }
  }
}

/** Shortens plain text to at most `max` code points, at a word boundary when one is near. */
export const truncate = (text: string, max: number): string => {
  const chars = Array.from(text)
  if (chars.length <= max) return text
  const cut = chars.slice(0, max - 1).join("")
  const space = cut.lastIndexOf(" ")
  return (space > cut.length * 0.6 ? cut.slice(0, space) : cut).trimEnd() + "…"
}
