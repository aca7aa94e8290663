/**
 * A fake OpenAI-compatible embeddings API for the tests and the quality bench,
 * with three embedders. "concept" (the default) encodes concepts
 * (`concepts.ts`, or the groups a test passes), so that
 * texts meaning the same thing in other words, or in another language, are
 * close, as with a real model; a text's other words only nudge its vector.
 * "glove" averages GloVe word vectors (`glove.ts`) as SIF does: a real, if
 * small and English-only, model of meaning. "ngram" hashes character n-grams:
 * no model, spelling only.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { Socket } from "node:net"
import { gzipSync } from "node:zlib"
import { concepts as defaultConcepts } from "./concepts.ts"
import { ensureGlove, gloveDimensions, type GloveModel, gloveVocabularySize } from "./glove.ts"

export type FakeMode = "ok" | "error" | "hang" | "wrong-size" | "wrong-index" | HostileMode

/** Answers meant to exhaust the client's memory (`FakeEmbeddings.mode`). */
export type HostileMode = "endless" | "huge" | "gzip-bomb" | "trickle"

/** The size of a "huge" answer, and what a "gzip-bomb" answer inflates to. */
export const hugeBytes = 400 * 1024 * 1024
export const bombBytes = 1024 * 1024 * 1024

export interface FakeEmbeddings {
  /** Base URL, e.g. `http://127.0.0.1:PORT/v1`; the API is `POST {url}/embeddings`. */
  readonly url: string
  readonly dimensions: number
  /**
   * How the next requests are answered; change at any time. "error": 500 with
   * a JSON error body; "hang": never answers (until close); "wrong-size":
   * vectors of dimensions-1; "wrong-index": indexes shifted by one.
   * Hostile, each begun as a valid answer and sent as fast as the client
   * reads it: "endless": a vector whose numbers never end; "huge": `hugeBytes`
   * with their `content-length`; "gzip-bomb": about 1 MB, `content-encoding:
   * gzip`, that inflates to `bombBytes`; "trickle": a valid beginning, then
   * one number every 100 ms, never reaching any size limit.
   */
  mode: FakeMode
  /** A call with an input containing this is refused with 400, as an API refuses a text over its model's context. */
  rejectInputsContaining: string | undefined
  /** The vector of an input containing this has 1e39 (finite in JavaScript, past single precision) in its first dimension. */
  overflowInputsContaining: string | undefined
  /** Bytes of hostile answers written so far (as sent: compressed, for a bomb). */
  readonly hostileBytesSent: number
  /** Hostile answers whose connection is still open (the client has not hung up). */
  readonly hostileAnswersOpen: number
  /** POST /embeddings requests received (any mode). */
  readonly calls: number
  /** Every input string received, in order. */
  readonly inputs: ReadonlyArray<string>
  /** The Authorization header of the last request, if any. */
  readonly authorization: string | undefined
  /** The `model` of the last request. */
  readonly model: string | undefined
  /** Closes the server, dropping hung connections. */
  close(): Promise<void>
}

export type Embedder = "concept" | "glove" | "ngram"

/** Each embedder's vector size when the options name none; GloVe's is the only one it has. */
export const defaultDimensions = { concept: 64, glove: gloveDimensions, ngram: 256 } as const satisfies Record<Embedder, number>

export interface FakeEmbeddingsOptions {
  /** "concept" by default. */
  readonly embedder?: Embedder
  /** The embedder's `defaultDimensions` by default. */
  readonly dimensions?: number
  /** The "concept" embedder's groups of words that mean one thing each; the groups of `concepts.ts` by default. */
  readonly concepts?: ReadonlyArray<ReadonlyArray<string>>
  /** 0 (any free port) by default. */
  readonly port?: number
}

// ---------------------------------------------------------------------------
// The concept embedder

/** The length of what a present concept adds (along its own direction). */
const conceptWeight = 1
/** What any other word (or CJK character bigram) puts on its pair. */
const wordWeight = 0.15

const cjk = String.raw`\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\u30FC\u3005`
const cjkChar = new RegExp(`[${cjk}]`, "u")
const cjkRun = new RegExp(`[${cjk}]+`, "gu")
const hiraganaOnly = /^[\p{Script=Hiragana}\u30FC]+$/u
/** A letter or digit: what Latin (Cyrillic, …) words are made of, in a text whose CJK characters are blanked out. */
const wordChar = String.raw`[\p{L}\p{N}]`
const latinWord = new RegExp(`${wordChar}+`, "gu")
/** The text with its CJK characters as spaces (the same length), for the Latin members and words. */
const blankCjk = (text: string) => text.replace(cjkRun, (run) => " ".repeat(run.length))

/** NFKC (full-width to ASCII, half-width kana to full-width), lower case, no combining accents, one apostrophe. */
const fold = (text: string) =>
  text.normalize("NFKC").toLowerCase().normalize("NFD").replace(/[\u0300-\u036f]/g, "").normalize("NFC").replace(/[\u2018\u2019\u02bc`´]/g, "'")

/** Function words (folded, 3 letters or more) of the six languages that carry no topic. */
const stopwords = new Set(`
the and for with this that these those from into onto are was were been being have has had but not you your yours our ours they them their there
then than what when where which who whom why how all any can could would should will shall may might must its his her she him out off over under
again also just only very too some such each every other another more most much few one two about after before because while does did doing get gets
got like make makes please pls thanks thank yes yet still even here now way want wants need needs let lets use used using able etc instead without
within via both same own really actually maybe though tho don doesn didn isn aren won can't don't doesn't didn't isn't it's i'm i'd i've we're we'd
we've they're there's that's let's anything something everything nothing someone anyone everyone per would've could lot lots bit right
und der die das den dem des ein eine einen einem einer eines ist sind war nicht mit von fur auf aus bei nach wie wir ich sie uns unser unsere
unseren unserem auch oder aber wenn dass noch nur schon sehr bitte wird werden kann konnen soll sollen sollte sollten hat haben immer alle allen
alles diese dieser dieses zum zur uber man mal gern gerne ware wurde wurden dann denn doch hier jetzt kein keine einfach etwa
les des une est sont pas pour par avec dans sur que qui quoi nous vous ils elles leur leurs mon mes ton tes son ses notre nos votre vos mais car
donc tout tous toute toutes plus tres bien aussi faut etre avoir fait faire cette ces comme quand meme sans ont deja encore
los las una uno unos unas del por para con sin que como cuando pero mas muy todo todos toda todas nuestro nuestra nuestros nuestras este esta
estos estas ese esa hay ser son estan tiene tenemos tengo seria poder puede hace sus les desde hasta entre tambien solo otro otra aqui nos
`.split(/\s+/).filter((w) => w.length > 0))

/** FNV-1a, 32 bits, over UTF-16 code units. */
const fnv1a = (text: string) => {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193) >>> 0
  }
  return hash
}

/** FNV-1a then a 32-bit finalizer (MurmurHash3's), so that keys differing in one character spread well. */
const hash = (key: string) => {
  let h = fnv1a(key)
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b) >>> 0
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35) >>> 0
  h ^= h >>> 16
  return h >>> 0
}

/** The (dimension, sign) pair a key hashes to. */
const slot = (key: string, dimensions: number): readonly [number, number] => {
  const h = hash(key)
  return [h % dimensions, h >>> 31 === 1 ? -1 : 1]
}

/**
 * A concept's direction: ±1 on two hashed dimensions (`concept:${i}` and
 * `concept:${i}:2`, moved to the next dimension if they meet), so that two
 * concepts are orthogonal unless their dimensions collide, and then share
 * only half of their length.
 */
const directions = new Map<string, ReadonlyArray<number>>()
const direction = (group: number, dimensions: number) => {
  const key = `${group}/${dimensions}`
  let vector = directions.get(key)
  if (!vector) {
    const v = new Array<number>(dimensions).fill(0)
    for (const name of [`concept:${group}`, `concept:${group}:2`].slice(0, dimensions)) {
      const [first, sign] = slot(name, dimensions)
      let d = first
      while (v[d] !== 0) d = (d + 1) % dimensions
      v[d] = sign
    }
    const norm = Math.hypot(...v)
    vector = v.map((x) => x / norm)
    directions.set(key, vector)
  }
  return vector
}

interface Member {
  readonly group: number
  /** Drop the matches of other groups that lie inside this one's (`!` in front of the member). */
  readonly exclusive: boolean
  /** CJK: matched as a substring. */
  readonly substring?: string
  /** Otherwise: matched at word boundaries. */
  readonly pattern?: LatinPattern
}

interface Fuzzy {
  readonly group: number
  readonly stem: string
  /** The member ends in `*`: the word needs only to start like it. */
  readonly prefix: boolean
}

interface Thesaurus {
  /** The CJK members. */
  readonly substrings: ReadonlyArray<Member>
  /** The Latin members by the first (up to) 3 letters of their first word: only a text with a word starting so can have them. */
  readonly byHead: ReadonlyMap<string, ReadonlyArray<Member>>
  /** The Latin members that start otherwise (a symbol, or a `*`): always tried. */
  readonly always: ReadonlyArray<Member>
  /** Single-word Latin members of 5 letters or more, by first letter: what a misspelt word may be. */
  readonly fuzzy: ReadonlyMap<string, ReadonlyArray<Fuzzy>>
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&")

/**
 * A Latin member: a whole word or phrase; a `*` at its end lets the last word
 * go on (a prefix), at its start lets the first word start earlier (the end of
 * a compound). Spaces and hyphens inside match any run of spaces and hyphens,
 * or none ("dark-mode", "darkmode"); an apostrophe is optional; a plain last
 * word may take a plural "s" or "es". The word boundaries are checked apart
 * (see `latinMatches`), which keeps the patterns cheap to compile.
 */
interface LatinPattern {
  readonly regex: RegExp
  readonly leading: boolean
  readonly trailing: boolean
}

const latinPattern = (member: string): LatinPattern => {
  const leading = member.startsWith("*")
  const trailing = member.endsWith("*")
  const core = member.slice(leading ? 1 : 0, trailing ? -1 : undefined)
  const body = Array.from(core).map((c) => (/[\s-]/.test(c) ? "[\\s\\-_]*" : c === "'" ? "'?" : escape(c))).join("").replace(/(\[\\s\\-_\]\*)+/g, "[\\s\\-_]*")
  const plural = !trailing && /\p{L}$/u.test(core) ? "(?:e?s)?" : ""
  return { regex: new RegExp(body + plural, "gu"), leading, trailing }
}

/** Where a Latin member occurs in `text`, whose letters and digits `word` marks. */
const latinMatches = function*(pattern: LatinPattern, text: string, word: Uint8Array) {
  const { regex } = pattern
  regex.lastIndex = 0
  for (let m = regex.exec(text); m !== null; m = regex.exec(text)) {
    let start = m.index
    let end = start + m[0].length
    regex.lastIndex = start + 1
    if (end === start) continue
    if (pattern.leading) while (start > 0 && word[start - 1]) start--
    else if (start > 0 && word[start - 1]) continue
    if (pattern.trailing) while (end < text.length && word[end]) end++
    else if (end < text.length && word[end]) continue
    regex.lastIndex = end
    yield { start, end }
  }
}

/** The keys a word of the text offers for `byHead`: its first 1, 2 and 3 letters. */
const heads = (word: string) => [word.slice(0, 1), word.slice(0, 2), word.slice(0, 3)]

const compiled = new WeakMap<ReadonlyArray<ReadonlyArray<string>>, Thesaurus>()

const compile = (concepts: ReadonlyArray<ReadonlyArray<string>>): Thesaurus => {
  const cached = compiled.get(concepts)
  if (cached) return cached
  const substrings: Array<Member> = []
  const byHead = new Map<string, Array<Member>>()
  const always: Array<Member> = []
  const fuzzy = new Map<string, Array<Fuzzy>>()
  concepts.forEach((words, group) => {
    for (const raw of words) {
      const exclusive = raw.startsWith("!")
      const member = fold(exclusive ? raw.slice(1) : raw).trim()
      if (member === "" || member === "*") continue
      if (cjkChar.test(member)) {
        substrings.push({ group, exclusive, substring: member.replace(/\*/g, "") })
        continue
      }
      const entry = { group, exclusive, pattern: latinPattern(member) }
      const first = /^[\p{L}\p{N}]+/u.exec(member)?.[0]
      if (first === undefined) always.push(entry)
      else {
        const head = first.slice(0, 3)
        byHead.set(head, [...(byHead.get(head) ?? []), entry])
      }
      const prefix = member.endsWith("*")
      const stem = prefix ? member.slice(0, -1) : member
      if (!member.startsWith("*") && /^\p{L}{5,}$/u.test(stem)) {
        fuzzy.set(stem[0]!, [...(fuzzy.get(stem[0]!) ?? []), { group, stem, prefix }])
      }
    }
  })
  const thesaurus = { substrings, byHead, always, fuzzy }
  compiled.set(concepts, thesaurus)
  return thesaurus
}

/** Optimal string alignment distance, stopping early once it exceeds 1. */
const withinOneEdit = (a: string, b: string): "same" | "substitution" | "other" | undefined => {
  if (a === b) return "same"
  if (Math.abs(a.length - b.length) > 1) return undefined
  if (a.length === b.length) {
    const diff: Array<number> = []
    for (let i = 0; i < a.length && diff.length <= 2; i++) if (a[i] !== b[i]) diff.push(i)
    if (diff.length === 1) return "substitution"
    if (diff.length === 2 && diff[1] === diff[0]! + 1 && a[diff[0]!] === b[diff[1]!] && a[diff[1]!] === b[diff[0]!]) return "other"
    return undefined
  }
  const [short, long] = a.length < b.length ? [a, b] : [b, a]
  let i = 0
  while (i < short.length && short[i] === long[i]) i++
  return short.slice(i) === long.slice(i + 1) ? "other" : undefined
}

/**
 * The group a word no member matched would have with one typo: a deleted,
 * inserted or swapped letter (a word of 4 letters or more), or a wrong one
 * (7 letters or more), against a member of 5 letters or more with the same
 * first letter.
 */
const misspelt = (word: string, thesaurus: Thesaurus): number | undefined => {
  if (word.length < 4 || stopwords.has(word)) return undefined
  for (const candidate of thesaurus.fuzzy.get(word[0]!) ?? []) {
    const heads = candidate.prefix
      ? [candidate.stem.length - 1, candidate.stem.length, candidate.stem.length + 1].filter((n) => n <= word.length).map((n) => word.slice(0, n))
        // Not a mere beginning of the stem ("noti" in "notice" for "notif*").
        .filter((head) => !candidate.stem.startsWith(head) && !head.startsWith(candidate.stem))
      : [word]
    for (const head of heads) {
      const edit = withinOneEdit(head, candidate.stem)
      if (edit === "other" || (edit === "substitution" && word.length >= 7)) return candidate.group
    }
  }
  return undefined
}

interface Match {
  readonly group: number
  readonly start: number
  readonly end: number
  readonly exclusive: boolean
}

/** The concept groups a text has, and the character ranges their members cover. */
const conceptsOf = (text: string, thesaurus: Thesaurus) => {
  const latin = blankCjk(text)
  const matches: Array<Match> = []
  for (const member of thesaurus.substrings) {
    const needle = member.substring!
    for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + 1)) {
      matches.push({ group: member.group, start: at, end: at + needle.length, exclusive: member.exclusive })
    }
  }
  const candidates = new Set(thesaurus.always)
  const word = new Uint8Array(latin.length)
  for (const m of latin.matchAll(latinWord)) {
    word.fill(1, m.index, m.index + m[0].length)
    for (const head of heads(m[0])) for (const member of thesaurus.byHead.get(head) ?? []) candidates.add(member)
  }
  for (const member of candidates) {
    for (const { start, end } of latinMatches(member.pattern!, latin, word)) {
      matches.push({ group: member.group, start, end, exclusive: member.exclusive })
    }
  }
  const exclusive = matches.filter((m) => m.exclusive)
  const kept = matches.filter((m) =>
    !exclusive.some((x) => x.group !== m.group && x.start <= m.start && m.end <= x.end && x.end - x.start > m.end - m.start)
  )
  return { groups: new Set(kept.map((m) => m.group)), covered: matches }
}

const overlaps = (covered: ReadonlyArray<Match>, start: number, end: number) => covered.some((m) => m.start < end && start < m.end)

/**
 * The vector the fake gives a text: unit length. Each concept the text has
 * (any member of its group) weighs 1 on two hashed (dimension, sign) pairs;
 * every other word of 3 letters or more (but function words), and every CJK
 * character bigram outside the concepts (but kana-only ones), weighs 0.15 on
 * one. A word that is a member with one typo counts as the member. An empty
 * text (or one of function words only) gives dimension 0.
 */
export const conceptVector = (text: string, dimensions: number, concepts: ReadonlyArray<ReadonlyArray<string>> = defaultConcepts): Array<number> => {
  const vector = new Array<number>(dimensions).fill(0)
  const add = (key: string, weight: number) => {
    const [dimension, sign] = slot(key, dimensions)
    vector[dimension]! += sign * weight
  }
  const folded = fold(text)
  const thesaurus = compile(concepts)
  const { groups, covered } = conceptsOf(folded, thesaurus)
  const words = new Set<string>()
  for (const m of blankCjk(folded).matchAll(latinWord)) {
    const word = m[0]
    if (word.length < 3 || stopwords.has(word) || overlaps(covered, m.index, m.index + word.length)) continue
    const group = misspelt(word, thesaurus)
    if (group !== undefined) groups.add(group)
    else words.add(word.length > 4 && word.endsWith("s") && !word.endsWith("ss") ? word.slice(0, -1) : word)
  }
  for (const m of folded.matchAll(cjkRun)) {
    const run = Array.from(m[0])
    let offset = m.index
    for (let i = 0; i + 1 < run.length; i++) {
      const bigram = run[i]! + run[i + 1]!
      const start = offset
      offset += run[i]!.length
      if (hiraganaOnly.test(bigram) || overlaps(covered, start, start + bigram.length)) continue
      words.add(bigram)
    }
  }
  for (const group of groups) {
    const d = direction(group, dimensions)
    for (let i = 0; i < dimensions; i++) vector[i]! += conceptWeight * d[i]!
  }
  for (const word of words) add(`word:${word}`, wordWeight)
  const norm = Math.hypot(...vector)
  if (norm === 0) return vector.map((_, i) => (i === 0 ? 1 : 0))
  return vector.map((x) => x / norm)
}

// ---------------------------------------------------------------------------
// The GloVe embedder: SIF (Arora, Liang & Ma, "A Simple but Tough-to-Beat
// Baseline for Sentence Embeddings", ICLR 2017)

/** SIF's a: the paper finds 1e-4 to 1e-3 best. */
const sifA = 1e-3
/**
 * p(w) by Zipf's law from w's rank r in the package's frequency-ordered list of
 * V entries: 1 / (r·H), H = Σ 1/k ≈ ln V + γ = ln(1.78·V) (≈ 13.3), so that
 * "the" has 7.5 % and a word of rank 1,000 0.0075 %.
 */
const zipfH = Math.log(1.78 * gloveVocabularySize)
/** SIF's weight a/(a + p(w)): 0.013 for "the", 0.5 at rank 75, 0.93 at rank 1,000. */
const sifWeight = (rank: number) => sifA / (sifA + 1 / (rank * zipfH))

/** A word as the GloVe vocabulary has them: ASCII letters and digits, with inner hyphens, and apostrophes that `gloveWords` resolves. */
const gloveToken = /[a-z0-9]+(?:['-][a-z0-9]+)*/g
/** The vocabulary's entries a `gloveToken` can reach: not its punctuation. */
const gloveWordOnly = /^[a-z0-9]+(?:-[a-z0-9]+)*$/
/** The clitics dropped after an apostrophe; "n't" is "not". */
const clitics = new Set(["s", "re", "ve", "ll", "d", "m"])
const negatedStems: Readonly<Record<string, string>> = { ca: "can", wo: "will", sha: "shall" }

/**
 * The vocabulary's words (or unknown ones) a `gloveToken` stands for: the
 * vocabulary has no apostrophes ("don't" is "do" and "not", "it's" is "it")
 * and has some hyphenated words whole ("long-term"), others in parts.
 */
const gloveWords = (token: string, ranks: ReadonlyMap<string, number>): Array<string> => {
  if (token.endsWith("n't")) {
    const stem = token.slice(0, -3)
    return [...gloveWords(negatedStems[stem] ?? stem, ranks), "not"]
  }
  const parts = token.split("'")
  if (parts.length > 1) return parts.filter((part, i) => i === 0 || !clitics.has(part)).flatMap((part) => gloveWords(part, ranks))
  return ranks.has(token) || !token.includes("-") ? [token] : token.split("-")
}

/**
 * SIF with GloVe: `fold`, the words the vocabulary knows (numbers and
 * non-Latin scripts it does not), each vector weighed a/(a + p(w)) and
 * averaged, less its projection on the common component, unit length.
 *
 * The paper removes the first principal component of a corpus's sentence
 * vectors; a fake has no corpus, so the common component is the one every
 * sentence vector leans towards: the expected SIF vector of a text whose words
 * are drawn by frequency, Σ p(w)·a/(a + p(w))·v(w) over the vocabulary (as a
 * unit vector). Its cosine with the first principal component of the SIF
 * vectors of the labelled set (`bench/suggestions/dataset.json`) is 0.94;
 * removing it takes the mean cosine of two of the set's English texts from
 * 0.68 to 0.30.
 *
 * A text without a known word (Chinese, digits) has that common component:
 * one fixed unit vector, orthogonal to every other text's, as a real English
 * model gives such texts much the same vector whatever they say.
 */
export const sifEmbedder = (model: GloveModel): (text: string) => Array<number> => {
  const { ranks, vectors } = model
  const common = new Array<number>(gloveDimensions).fill(0)
  model.words.forEach((word, i) => {
    if (!gloveWordOnly.test(word)) return
    const weight = sifWeight(i + 1) / ((i + 1) * zipfH)
    for (let d = 0; d < gloveDimensions; d++) common[d]! += weight * vectors[i * gloveDimensions + d]!
  })
  const commonNorm = Math.hypot(...common)
  const unitCommon = common.map((x) => x / commonNorm)
  return (text) => {
    const sum = new Array<number>(gloveDimensions).fill(0)
    for (const [token] of fold(text).matchAll(gloveToken)) {
      for (const word of gloveWords(token, ranks)) {
        const rank = ranks.get(word)
        if (rank === undefined) continue
        const weight = sifWeight(rank)
        for (let d = 0; d < gloveDimensions; d++) sum[d]! += weight * vectors[(rank - 1) * gloveDimensions + d]!
      }
    }
    const along = sum.reduce((dot, x, d) => dot + x * unitCommon[d]!, 0)
    const rest = sum.map((x, d) => x - along * unitCommon[d]!)
    const norm = Math.hypot(...rest)
    return norm === 0 ? unitCommon : rest.map((x) => x / norm)
  }
}

// ---------------------------------------------------------------------------
// The n-gram embedder

/**
 * A model-free vector (fastText's subwords, Bojanowski et al. 2017, without
 * the training): each word of letters and digits of the `fold`ed text gives
 * its character 3- to 5-grams with boundary marks ("<cat>": "<ca", "cat",
 * "at>", "<cat", "cat>", "<cat>"), each run of CJK characters its character
 * bigrams (a lone character itself); each feature goes on one hashed
 * (dimension, sign) pair with weight 1 + ln(its count); unit length. A
 * misspelt word keeps most of its n-grams. A text with none gives dimension 0.
 */
export const ngramVector = (text: string, dimensions: number = defaultDimensions.ngram): Array<number> => {
  const counts = new Map<string, number>()
  const count = (feature: string) => counts.set(feature, (counts.get(feature) ?? 0) + 1)
  const folded = fold(text)
  for (const [word] of blankCjk(folded).matchAll(latinWord)) {
    const marked = Array.from(`<${word}>`)
    for (let n = 3; n <= 5; n++) for (let i = 0; i + n <= marked.length; i++) count(marked.slice(i, i + n).join(""))
  }
  for (const [run] of folded.matchAll(cjkRun)) {
    const chars = Array.from(run)
    if (chars.length === 1) count(run)
    for (let i = 0; i + 1 < chars.length; i++) count(chars[i]! + chars[i + 1]!)
  }
  const vector = new Array<number>(dimensions).fill(0)
  for (const [feature, n] of counts) {
    const [dimension, sign] = slot(`ngram:${feature}`, dimensions)
    vector[dimension]! += sign * (1 + Math.log(n))
  }
  const norm = Math.hypot(...vector)
  if (norm === 0) return vector.map((_, i) => (i === 0 ? 1 : 0))
  return vector.map((x) => x / norm)
}

// ---------------------------------------------------------------------------
// The server

/**
 * The vector size and the text-to-vector function of the fake these options
 * start (the bench's in-process embedder); "glove" fetches GloVe into its
 * cache first if need be, and takes no other size.
 */
export const loadEmbedder = async (options: FakeEmbeddingsOptions = {}): Promise<{ readonly dimensions: number; readonly embed: (text: string) => Array<number> }> => {
  const embedder = options.embedder ?? "concept"
  const dimensions = options.dimensions ?? defaultDimensions[embedder]
  switch (embedder) {
    case "concept": {
      const concepts = options.concepts ?? defaultConcepts
      return { dimensions, embed: (text) => conceptVector(text, dimensions, concepts) }
    }
    case "ngram":
      return { dimensions, embed: (text) => ngramVector(text, dimensions) }
    case "glove":
      if (dimensions !== gloveDimensions) throw new Error(`GloVe vectors have ${gloveDimensions} dimensions, not ${dimensions}`)
      return { dimensions, embed: sifEmbedder(await ensureGlove()) }
  }
}

const json = (res: ServerResponse, status: number, body: unknown) => {
  const text = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
  res.end(text)
}

const apiError = (message: string, type: string) => ({ error: { message, type, param: null, code: null } })

/** Writes `chunks` as the client takes them (waiting for `drain`), until they end or the client goes away. */
const pump = async (res: ServerResponse, chunks: Iterable<Buffer>, sent: (bytes: number) => void) => {
  for (const chunk of chunks) {
    if (res.destroyed) return
    sent(chunk.byteLength)
    if (!res.write(chunk)) {
      const goOn = await new Promise<boolean>((resolve) => {
        res.once("drain", () => resolve(true))
        res.once("close", () => resolve(false))
      })
      if (!goOn) return
    }
  }
  res.end()
}

const mebibyte = 1024 * 1024
/** One MiB of JSON whitespace, and the same gzipped (about 1 KiB): a bomb is a gzip member per MiB, as RFC 1952 allows. */
let spaces: { readonly plain: Buffer; readonly gzip: Buffer } | undefined
const mebibyteOfSpaces = () => spaces ??= (() => {
  const plain = Buffer.alloc(mebibyte, " ")
  return { plain, gzip: gzipSync(plain, { level: 9 }) }
})()

/**
 * The valid answer `whole`, with a `padding` field of `bytes` blanks and a 0
 * (valid JSON, for whoever reads it all), each piece gzipped when `gzip`.
 */
const padded = (whole: object, bytes: number, gzip: boolean) => {
  const head = Buffer.from(`${JSON.stringify(whole).slice(0, -1)},"padding":`)
  const tail = Buffer.from("0}")
  const mebibytes = Math.floor(bytes / mebibyte)
  const pieces = function*() {
    yield gzip ? gzipSync(head) : head
    const { plain, gzip: compressed } = mebibyteOfSpaces()
    for (let i = 0; i < mebibytes; i++) yield gzip ? compressed : plain
    yield gzip ? gzipSync(tail) : tail
  }
  return { pieces: pieces(), length: head.byteLength + mebibytes * mebibyte + tail.byteLength }
}

const endlessHead = `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0`

/** An answer whose first vector's numbers never end. */
function* endless() {
  yield Buffer.from(endlessHead)
  const numbers = Buffer.from(",0.012345678901234567".repeat(3_000))
  for (;;) yield numbers
}

/** A vector as OpenAI's `encoding_format: "base64"` sends it: little-endian float32. */
const base64 = (vector: ReadonlyArray<number>) => Buffer.from(new Float32Array(vector).buffer).toString("base64")

export const startFakeEmbeddings = async (options: FakeEmbeddingsOptions = {}): Promise<FakeEmbeddings> => {
  const { dimensions, embed } = await loadEmbedder(options)
  const sockets = new Set<Socket>()
  const inputs: Array<string> = []
  const state = { calls: 0, authorization: undefined as string | undefined, model: undefined as string | undefined, hostileBytesSent: 0, hostileAnswersOpen: 0 }

  const answer = (req: IncomingMessage, res: ServerResponse, body: string, mode: FakeMode, poison: string | undefined, overflow: string | undefined) => {
    const path = (req.url ?? "/").split("?")[0]!.replace(/\/+$/, "")
    if (req.method !== "POST" || path !== "/v1/embeddings") {
      return json(res, 404, apiError(`no route for ${req.method} ${path}`, "invalid_request_error"))
    }
    state.calls++
    state.authorization = req.headers.authorization
    let request: { model?: unknown; input?: unknown; encoding_format?: unknown }
    try {
      request = JSON.parse(body)
    } catch {
      return json(res, 400, apiError("the body is not JSON", "invalid_request_error"))
    }
    if (typeof request !== "object" || request === null) return json(res, 400, apiError("the body is not an object", "invalid_request_error"))
    state.model = typeof request.model === "string" ? request.model : undefined
    const texts = typeof request.input === "string" ? [request.input] : request.input
    if (!Array.isArray(texts) || texts.length === 0 || !texts.every((t): t is string => typeof t === "string")) {
      return json(res, 400, apiError("input must be a string or a non-empty array of strings", "invalid_request_error"))
    }
    inputs.push(...texts)
    if (mode === "hang") return
    if (mode === "error") return json(res, 500, apiError("the fake model is down", "server_error"))
    if (poison !== undefined && texts.some((t) => t.includes(poison))) {
      return json(res, 400, apiError("an input is longer than the model's context", "invalid_request_error"))
    }
    const tokens = texts.reduce((n, t) => n + Math.max(1, Math.ceil(t.length / 4)), 0)
    const data = texts.map((text, i) => {
      const vector = embed(text)
      if (overflow !== undefined && text.includes(overflow)) vector[0] = 1e39
      const embedding = mode === "wrong-size" ? vector.slice(0, dimensions - 1) : vector
      return { object: "embedding", index: mode === "wrong-index" ? i + 1 : i, embedding: request.encoding_format === "base64" ? base64(embedding) : embedding }
    })
    const whole = { object: "list", data, model: state.model ?? "", usage: { prompt_tokens: tokens, total_tokens: tokens } }
    const sent = (bytes: number) => (state.hostileBytesSent += bytes)
    if (mode === "endless" || mode === "huge" || mode === "gzip-bomb" || mode === "trickle") {
      state.hostileAnswersOpen++
      res.once("close", () => state.hostileAnswersOpen--)
    }
    switch (mode) {
      case "endless":
        res.writeHead(200, { "content-type": "application/json" })
        return void pump(res, endless(), sent)
      case "huge": {
        const { pieces, length } = padded(whole, hugeBytes, false)
        res.writeHead(200, { "content-type": "application/json", "content-length": String(length) })
        return void pump(res, pieces, sent)
      }
      case "gzip-bomb":
        res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" })
        return void pump(res, padded(whole, bombBytes, true).pieces, sent)
      case "trickle": {
        res.writeHead(200, { "content-type": "application/json" })
        res.write(endlessHead)
        const timer = setInterval(() => res.write(",0.5"), 100)
        res.once("close", () => clearInterval(timer))
        return
      }
      default:
        json(res, 200, whole)
    }
  }

  return new Promise((resolve, reject) => {
    const fake = {
      url: "",
      dimensions,
      mode: "ok" as FakeMode,
      rejectInputsContaining: undefined as string | undefined,
      overflowInputsContaining: undefined as string | undefined,
      get hostileBytesSent() {
        return state.hostileBytesSent
      },
      get hostileAnswersOpen() {
        return state.hostileAnswersOpen
      },
      get calls() {
        return state.calls
      },
      inputs: inputs as ReadonlyArray<string>,
      get authorization() {
        return state.authorization
      },
      get model() {
        return state.model
      },
      close: () =>
        new Promise<void>((done) => {
          for (const socket of sockets) socket.destroy()
          server.close(() => done())
        })
    }
    const server = createServer((req, res) => {
      // The mode when the request arrived, not when its body did.
      const mode = fake.mode
      let body = ""
      req.setEncoding("utf8")
      req.on("data", (chunk: string) => (body += chunk))
      req.on("end", () => answer(req, res, body, mode, fake.rejectInputsContaining, fake.overflowInputsContaining))
    })
    server.on("connection", (socket) => {
      sockets.add(socket)
      socket.on("close", () => sockets.delete(socket))
    })
    server.once("error", reject)
    server.listen(options.port ?? 0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address ? address.port : 0
      fake.url = `http://127.0.0.1:${port}/v1`
      resolve(fake)
    })
  })
}
