/**
 * What the visitor typed as the HTML the API takes, what the API counts, and
 * links made from the host's templates (`postUrl`, `updateUrl`).
 */
import type { Suggestion } from "./options.js"

const escapes: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;" }

/**
 * What the visitor typed, as the HTML the API takes: escaped, paragraphs at
 * blank lines, line breaks kept. `a < b` and `<b>` stay text, exactly as typed.
 */
export const textToHtml = (text: string): string =>
  text.trim() === "" ? "" : text.trim().split(/\n\s*\n/).map((paragraph) =>
    `<p>${paragraph.trim().replace(/[&<>"]/g, (c) => escapes[c]!).replace(/\n/g, "<br>")}</p>`).join("")

/** A length as the API counts it: Unicode code points, not UTF-16 units. */
export const codePoints = (text: string): number => {
  let n = 0
  for (const _ of text) n++
  return n
}

/** `made` as an absolute http(s) URL (relative ones against `base`), else undefined. */
export const httpUrl = (made: unknown, base: string): string | undefined => {
  // `undefined`, `null`, `""` or anything else that is not a URL: no link (`new URL(null)` would make one).
  if (!(made instanceof URL) && (typeof made !== "string" || made === "")) return undefined
  try {
    const url = new URL(made, base)
    return url.protocol === "https:" || url.protocol === "http:" ? url.href : undefined
  } catch {
    return undefined
  }
}

/** What a link template or function is given: a suggestion, a new post (`excerpt` empty), or a changelog entry. */
export type Linked = Pick<Suggestion, "id" | "slug"> & Partial<Suggestion>

/**
 * The link for a post or an update: a template (`{slug}`, `{id}`, each
 * URL-encoded) or, in the host page, a function; only http(s) URLs are used.
 */
export const linkOf = (
  template: string | ((post: Suggestion) => string | URL | null | undefined) | undefined,
  post: Linked,
  base: string
): string | undefined => {
  try {
    return httpUrl(typeof template === "function" ? template(post as Suggestion)
      : template?.replace(/\{(slug|id)\}/g, (_, name: "slug" | "id") => encodeURIComponent(post[name])), base)
  } catch {
    return undefined // the host's function threw
  }
}
