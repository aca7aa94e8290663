import createDOMPurify from "dompurify"
import { Context, Layer } from "effect"
import { JSDOM } from "jsdom"
import { type DefaultTreeAdapterTypes, parseFragment, serialize } from "parse5"

const textTags = [
  "p", "br", "h1", "h2", "h3", "h4", "h5", "h6", "b", "strong", "i", "em", "u", "s", "strike", "del",
  "code", "pre", "blockquote", "ul", "ol", "li", "a"
]

/** Elements whose boundaries separate words when HTML is flattened to text. */
const blockTags = new Set([
  "P", "BR", "H1", "H2", "H3", "H4", "H5", "H6", "PRE", "BLOCKQUOTE", "UL", "OL", "LI", "DIV", "TR", "TD", "TH"
])

/**
 * The sanitizer's policy version: raise it whenever what `update` gives can
 * change, so that changelog content kept as served (`update_html`) is
 * sanitized again.
 */
export const sanitizerVersion = 1

/**
 * How deep elements may nest, and how many there may be, before DOMPurify and
 * jsdom see the HTML (`bound`). jsdom's tree building and DOMPurify recurse
 * per level and cost far more per element than the parser: 20,000 characters
 * of `<b>` took seconds, then overflowed the stack.
 */
export const maxDepth = 32
export const maxElements = 1_000

/** As jsdom parses for DOMPurify: scripting off, so `<noscript>` holds markup, not text. */
const parseOptions = { scriptingEnabled: false }

type P5Parent = DefaultTreeAdapterTypes.ParentNode
type P5Child = DefaultTreeAdapterTypes.ChildNode
type P5Element = DefaultTreeAdapterTypes.Element

const isElement = (node: P5Child): node is P5Element => "tagName" in node
/** An element's children; a template's are in its content fragment. */
const childrenOf = (element: P5Element): Array<P5Child> =>
  element.tagName === "template" ? (element as DefaultTreeAdapterTypes.Template).content.childNodes : element.childNodes

/** How many `<` the HTML holds: an upper bound on its tags (the parser adds a few implied elements at most). */
const openings = (html: string) => {
  let n = 0
  for (let i = html.indexOf("<"); i !== -1; i = html.indexOf("<", i + 1)) n++
  return n
}

/**
 * The HTML with elements deeper than `maxDepth`, or after the first
 * `maxElements`, unwrapped: their children, text included, take their place.
 * parse5's parser keeps its own stack, and this walk keeps an explicit one, so
 * neither recurses per element; the serializer then recurses `maxDepth` deep at
 * most. Linear in the input. HTML with few tags is returned as it is.
 */
export const bound = (html: string): string => {
  if (openings(html) * 4 <= maxDepth) return html
  const root = parseFragment(html, parseOptions)
  let elements = 0
  const parents: Array<readonly [P5Parent, number]> = [[root, 0]]
  while (parents.length > 0) {
    const [parent, depth] = parents.pop()!
    const kept: Array<P5Child> = []
    const pending = parent.childNodes.slice().reverse()
    while (pending.length > 0) {
      const child = pending.pop()!
      if (isElement(child)) {
        if (depth >= maxDepth || elements >= maxElements) {
          const children = childrenOf(child)
          for (let i = children.length - 1; i >= 0; i--) pending.push(children[i]!)
          continue
        }
        elements++
        parents.push([child.tagName === "template" ? (child as DefaultTreeAdapterTypes.Template).content : child, depth + 1])
      }
      child.parentNode = parent as P5Child["parentNode"]
      kept.push(child)
    }
    parent.childNodes = kept
  }
  return serialize(root)
}

/**
 * Elements whose content is not text a reader sees: what DOMPurify drops with
 * its element (its default FORBID_CONTENTS), and the content of embedded SVG and MathML.
 */
const hiddenContent = new Set([
  "annotation-xml", "audio", "colgroup", "desc", "foreignobject", "head", "iframe", "math", "mi", "mn", "mo", "ms",
  "mtext", "noembed", "noframes", "noscript", "plaintext", "script", "style", "svg", "template", "thead", "title",
  "video", "xmp", "object", "embed", "select", "textarea"
])

/**
 * Plain text of HTML: text nodes in order, a space at block boundaries, the
 * content of `hiddenContent` elements and comments left out. parse5's parser
 * and this walk keep their own stacks: linear, never recursive.
 */
const flatten = (html: string): string => {
  const out: Array<string> = []
  const pending: Array<P5Child | " "> = parseFragment(html, parseOptions).childNodes.slice().reverse()
  while (pending.length > 0) {
    const node = pending.pop()!
    if (node === " ") {
      out.push(" ")
    } else if (node.nodeName === "#text") {
      out.push((node as DefaultTreeAdapterTypes.TextNode).value)
    } else if (isElement(node) && !hiddenContent.has(node.tagName)) {
      const block = blockTags.has(node.tagName.toUpperCase())
      if (block) {
        out.push(" ")
        pending.push(" ")
      }
      const children = childrenOf(node)
      for (let i = children.length - 1; i >= 0; i--) pending.push(children[i]!)
    }
  }
  return out.join("")
}

const linkRel = "noopener noreferrer nofollow ugc"
const webUrl = /^https?:\/\//i
const linkUrl = /^(?:https?:|mailto:)/i

export interface SanitizerShape {
  /** Post content: text formatting and links, no images. */
  readonly post: (html: string) => string
  /** Changelog content: as posts, plus `http(s)` images. */
  readonly update: (html: string) => string
  /** Plain text: no tags, entities decoded, whitespace collapsed (parse5 alone: no DOM, no sanitizing needed for text). */
  readonly text: (html: string) => string
}

/** DOMPurify over jsdom, one instance reused for every call (docs/api.md: "Limits"). */
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

  return {
    post: (html) => purify.sanitize(bound(html), postConfig),
    update: (html) => purify.sanitize(bound(html), updateConfig),
    text: (html) => flatten(html).replace(/\s+/gu, " ").trim()
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
