import { createHash } from "node:crypto"

/**
 * The lexical features of a text, language-neutral (decision 0008). Posts
 * and drafts go through the same function, so a feature one side emits is a
 * feature the other side can match:
 *
 * - `w` words, folded (lower case, no diacritics);
 * - `p` the first five characters of words of six or more (export, exporting,
 *   exported; notify, notification);
 * - `t` character trigrams of title words (typos, compounds: "Dunkelmodus"
 *   and "dunkler Modus" share `dun`, `mod`, `dus`…);
 * - `i` initialisms of two to four consecutive words, and short words as
 *   they are ("single sign on" and "SSO" both give `i:sso`);
 * - `c` character bigrams of runs in scripts written without spaces
 *   (Chinese, Japanese, Korean, Thai, Lao, Khmer, Myanmar).
 *
 * Everything counts code points, never UTF-16 units: a letter outside the
 * Basic Multilingual Plane is never cut in half.
 */

export type Kind = "w" | "p" | "t" | "i" | "c"

/** How much a shared feature of each kind says about two texts asking the same thing. */
export const kindWeight: Record<Kind, number> = { w: 1, p: 0.6, t: 0.25, i: 0.8, c: 1 }

/** Body features count less than title features, on both sides. */
export const bodyWeight = 0.5

/** A post's or draft's body is read this far: enough to say what it asks, bounded for long texts. */
export const maxBodyWords = 80
const maxBodyCjkChars = 240
/**
 * Longer tokens are not words (blobs, run-together URLs) and say nothing
 * about a request; PostgreSQL would refuse them as lexemes past 2,047 bytes.
 */
export const maxWordLength = 40

/** Scripts written without spaces between words: split into character bigrams instead. */
const unspaced = "\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Hangul}\\p{Script=Thai}\\p{Script=Lao}\\p{Script=Khmer}\\p{Script=Myanmar}ー"
const cjk = new RegExp(`[${unspaced}]`, "u")
/** Letters with their combining marks (Devanagari vowel signs are part of the word), and digits. */
const token = /[\p{L}\p{M}\p{N}]+/gu
const runs = new RegExp(`[${unspaced}\\p{M}]+|[^${unspaced}]+`, "gu")

/**
 * Lower case, compatibility forms folded, accents removed ("Crème" → "creme",
 * "Ｆｕｌｌ" → "full"). Only the combining diacritical marks block goes: the
 * Japanese voicing marks are part of the letter (ダ is not タ).
 */
/** Lone UTF-16 surrogates (half a character) become U+FFFD, as `String.prototype.toWellFormed` does. */
const loneSurrogates = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

export const fold = (text: string) =>
  text.replace(loneSurrogates, "\uFFFD").normalize("NFKC").toLowerCase().normalize("NFD").replace(/[\u0300-\u036f]+/g, "").normalize("NFC")

interface Split {
  readonly words: Array<string>
  readonly cjk: Array<string>
}

const split = (text: string): Split => {
  const words: Array<string> = []
  const cjkRuns: Array<string> = []
  for (const raw of fold(text).match(token) ?? []) {
    if (!cjk.test(raw)) {
      words.push(raw)
      continue
    }
    for (const run of raw.match(runs) ?? []) (cjk.test(run) ? cjkRuns : words).push(run)
  }
  return { words, cjk: cjkRuns }
}

const trigrams = (word: string) => {
  const padded = ["#", ...word, "#"]
  const out: Array<string> = []
  for (let i = 0; i + 3 <= padded.length; i++) out.push(padded.slice(i, i + 3).join(""))
  return out
}

const bigrams = (run: string) => {
  const chars = Array.from(run)
  if (chars.length === 1) return chars
  const out: Array<string> = []
  for (let i = 0; i + 1 < chars.length; i++) out.push(chars[i]! + chars[i + 1]!)
  return out
}

const isLetters = (word: string) => /^[\p{L}\p{M}]+$/u.test(word)
const length = (word: string) => Array.from(word).length

/** Initialism windows are read this far into a body (posts only: a draft's come from its title). */
const maxInitialismBodyWords = 40

/**
 * Every feature of one field, as `kind:value`. `side` says whose: a post's
 * body also gives initialisms of its word windows, so that a draft's "SSO"
 * finds a post's "single sign-on" without a draft paying for every window.
 */
const features = (text: string, field: "title" | "body", side: "post" | "draft"): Set<string> => {
  const { words: all, cjk: cjkRuns } = split(text)
  const words = field === "body" ? all.slice(0, maxBodyWords) : all
  const out = new Set<string>()
  for (const word of words) {
    const size = length(word)
    if ((size < 2 && !/\d/.test(word)) || size > maxWordLength) continue
    out.add(`w:${word}`)
    if (size >= 6 && isLetters(word)) out.add(`p:${Array.from(word).slice(0, 5).join("")}`)
    if (size <= 5 && size >= 2) out.add(`i:${word}`)
    if (field === "title" && size >= 3 && isLetters(word)) for (const gram of trigrams(word)) out.add(`t:${gram}`)
  }
  const windowed = field === "title" ? words : side === "post" ? words.slice(0, maxInitialismBodyWords) : []
  for (let size = 2; size <= 4; size++) {
    for (let i = 0; i + size <= windowed.length; i++) {
      const window = windowed.slice(i, i + size)
      if (window.every((w) => length(w) >= 2 && isLetters(w))) out.add(`i:${window.map((w) => Array.from(w)[0]).join("")}`)
    }
  }
  let budget = field === "body" ? maxBodyCjkChars : Infinity
  for (const run of cjkRuns) {
    if (budget <= 0) break
    const part = Array.from(run).slice(0, budget).join("")
    budget -= part.length
    for (const gram of bigrams(part)) out.add(`c:${gram}`)
  }
  return out
}

export interface Lexicon {
  readonly title: ReadonlyArray<string>
  /** Body features not already in the title. */
  readonly body: ReadonlyArray<string>
}

/** A text's features by field. */
export const lexicon = (title: string, body: string, side: "post" | "draft" = "post"): Lexicon => {
  const inTitle = features(title, "title", side)
  const inBody = [...features(body, "body", side)].filter((f) => !inTitle.has(f))
  return { title: [...inTitle], body: inBody }
}

export const kindOf = (feature: string) => feature[0] as Kind

/**
 * A draft's features, each with its weight: its kind's, halved when it only
 * occurs in the body.
 */
export const queryFeatures = (title: string, body: string): Array<{ readonly feature: string; readonly weight: number }> => {
  const { title: t, body: b } = lexicon(title, body, "draft")
  return [
    ...t.map((feature) => ({ feature, weight: kindWeight[kindOf(feature)] })),
    ...b.map((feature) => ({ feature, weight: kindWeight[kindOf(feature)] * bodyWeight }))
  ]
}

const boardKeyLength = 20

/**
 * Features are stored scoped to their board: `<board key>/<feature>`, so that
 * the GIN index's posting list of a lexeme is one board's, and its length is
 * that board's document frequency.
 */
export const boardKey = (boardId: string) => createHash("sha256").update(boardId).digest("hex").slice(0, boardKeyLength)

/** Where a stored feature's kind is, 1-based (SQL's `substr`): after its board key and the "/". */
export const storedKindAt = boardKeyLength + 2

/**
 * The kinds that are a text's words: `w`, and `c` where words are not
 * spaced (a bigram is the nearest to a word there is). Whether two posts are
 * near-exact copies is read on these (`suggestions/VectorSearch.ts`, decision 0027).
 */
export const wordKinds: ReadonlyArray<Kind> = ["w", "c"]

const quote = (lexeme: string) => `'${lexeme.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`

/**
 * A post's two lexicon columns: `lexicon`, every feature (GIN-indexed: the
 * postings), and `titleLexicon`, the title's alone: small enough to stay in
 * the row, so telling a title match from a body match reads no large value.
 */
export const tsvectorLiterals = (boardId: string, lex: Lexicon): { readonly lexicon: string; readonly titleLexicon: string } => {
  const key = boardKey(boardId)
  const title = lex.title.map((f) => quote(`${key}/${f}`))
  return { lexicon: [...title, ...lex.body.map((f) => quote(`${key}/${f}`))].join(" "), titleLexicon: title.join(" ") }
}

/** The tsquery of one stored feature. */
export const tsqueryLiteral = (lexeme: string) => quote(lexeme)

/** What suggestions search for a post: its features, scoped to its board; nothing for a private post. */
export const lexiconOf = (post: {
  readonly boardId: string
  readonly title: string
  readonly text: string
  readonly visibility: "public" | "private"
}) => post.visibility === "public" ? tsvectorLiterals(post.boardId, lexicon(post.title, post.text)) : { lexicon: "", titleLexicon: "" }

/** A post's two lexicon columns, as `tsvector` literals. */
export type Lexicons = ReturnType<typeof lexiconOf>
