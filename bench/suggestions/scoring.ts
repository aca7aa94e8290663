/**
 * How `npm run quality` scores answers and fits settings (decision 0031):
 * the metrics, leave-one-board-out fitting, and the two fair anchors (a
 * trigram ranking and BM25 scaled by the draft's best possible score, each
 * shown above one global threshold). Pure functions over what the runs
 * collected, so that a saved run (`--save`, `--load`) is scored again in
 * seconds.
 */
import { fold } from "../../packages/server/dist/lexicon/lexicon.js"

/** One labelled draft's board: a unit of leave-one-board-out. */
export interface Unit {
  /** `<set>/<board id>` */
  readonly key: string
  /** A board of a real tracker (`sets/`), not the project's own set. */
  readonly real: boolean
}

/** Sums over drafts, so that boards add up and one board is taken away (leave-one-board-out) by subtraction. */
export interface Stats {
  positives: number
  recall: number
  rr: number
  hit1: number
  negatives: number
  results: number
  empty: number
}

export const emptyStats = (): Stats => ({ positives: 0, recall: 0, rr: 0, hit1: 0, negatives: 0, results: 0, empty: 0 })

/** Adds one answer (`ids`, best first) to `into`. */
export const add = (into: Stats, expected: ReadonlyArray<string>, ids: ReadonlyArray<string>) => {
  const top = ids.slice(0, 5)
  if (expected.length > 0) {
    into.positives++
    into.recall += expected.filter((id) => top.includes(id)).length / Math.min(5, expected.length)
    const i = top.findIndex((id) => expected.includes(id))
    if (i >= 0) into.rr += 1 / (i + 1)
    if (i === 0) into.hit1++
  } else {
    into.negatives++
    into.results += top.length
    if (top.length === 0) into.empty++
  }
  return into
}

export const plus = (a: Stats, b: Stats): Stats => ({
  positives: a.positives + b.positives,
  recall: a.recall + b.recall,
  rr: a.rr + b.rr,
  hit1: a.hit1 + b.hit1,
  negatives: a.negatives + b.negatives,
  results: a.results + b.results,
  empty: a.empty + b.empty
})

export const minus = (a: Stats, b: Stats): Stats => ({
  positives: a.positives - b.positives,
  recall: a.recall - b.recall,
  rr: a.rr - b.rr,
  hit1: a.hit1 - b.hit1,
  negatives: a.negatives - b.negatives,
  results: a.results - b.results,
  empty: a.empty - b.empty
})

export interface Metrics {
  readonly positives: number
  /** Share of the expected posts in the top 5, per draft with a duplicate, averaged. */
  readonly recall: number
  readonly mrr: number
  readonly hit1: number
  readonly negatives: number
  /** Results per draft with no duplicate. */
  readonly perNegative: number
  /** Share of the drafts with no duplicate answered `[]`. */
  readonly emptyShare: number
}

export const metrics = (s: Stats): Metrics => ({
  positives: s.positives,
  recall: s.positives === 0 ? 0 : s.recall / s.positives,
  mrr: s.positives === 0 ? 0 : s.rr / s.positives,
  hit1: s.positives === 0 ? 0 : s.hit1 / s.positives,
  negatives: s.negatives,
  perNegative: s.negatives === 0 ? 0 : s.results / s.negatives,
  emptyShare: s.negatives === 0 ? 1 : s.empty / s.negatives
})

/**
 * What a fit may spend on drafts with no duplicate, pooled over the boards it
 * fits on: the targets (at most 0.8 results per such draft, at least
 * 60 % of them answered `[]`, no board above 1.5), with a margin, so that a
 * board left out of the fit lands within them.
 */
export interface Budget {
  readonly perNegative: number
  readonly emptyShare: number
  readonly perBoard: number
}

export const budget: Budget = { perNegative: 0.65, emptyShare: 0.65, perBoard: 1.2 }

/** Within `b` over these boards' stats (pooled, and each board). */
export const within = (pooled: Stats, boards: ReadonlyArray<Stats>, b: Budget = budget) => {
  const m = metrics(pooled)
  return m.perNegative <= b.perNegative && m.emptyShare >= b.emptyShare && boards.every((s) => metrics(s).perNegative <= b.perBoard)
}

/** What a fit maximises: recall@5 + MRR@5, pooled. */
export const objective = (pooled: Stats) => {
  const m = metrics(pooled)
  return m.recall + m.mrr
}

/**
 * Leave-one-board-out: for each unit, the setting (index into `stats`) that
 * is within the budget on every other board and best on them; then the
 * left-out board's stats under it. `stats[setting]` maps unit keys to stats.
 * The first setting within budget wins ties (order the grid from cautious to bold).
 */
export const leaveOneBoardOut = (
  units: ReadonlyArray<Unit>,
  stats: ReadonlyArray<ReadonlyMap<string, Stats>>,
  b: Budget = budget
): Map<string, { readonly setting: number; readonly stats: Stats }> => {
  const totals = stats.map((perUnit) => [...perUnit.values()].reduce(plus, emptyStats()))
  const out = new Map<string, { readonly setting: number; readonly stats: Stats }>()
  for (const unit of units) {
    let best = -1
    let bestScore = -Infinity
    for (let i = 0; i < stats.length; i++) {
      const own = stats[i]!.get(unit.key) ?? emptyStats()
      const rest = minus(totals[i]!, own)
      const others = units.filter((u) => u.key !== unit.key).map((u) => stats[i]!.get(u.key) ?? emptyStats())
      if (!within(rest, others, b)) continue
      const score = objective(rest)
      if (score > bestScore + 1e-12) {
        best = i
        bestScore = score
      }
    }
    // Nothing within budget: the most cautious setting (the grid's first).
    const setting = best < 0 ? 0 : best
    out.set(unit.key, { setting, stats: stats[setting]!.get(unit.key) ?? emptyStats() })
  }
  return out
}

/** The setting within budget and best over every board: the one the code uses. */
export const fitAll = (units: ReadonlyArray<Unit>, stats: ReadonlyArray<ReadonlyMap<string, Stats>>, b: Budget = budget) => {
  let best = 0
  let bestScore = -Infinity
  for (let i = 0; i < stats.length; i++) {
    const boards = units.map((u) => stats[i]!.get(u.key) ?? emptyStats())
    const pooled = boards.reduce(plus, emptyStats())
    if (!within(pooled, boards, b)) continue
    const score = objective(pooled)
    if (score > bestScore + 1e-12) {
      best = i
      bestScore = score
    }
  }
  return best
}

// ---------------------------------------------------------------------------
// The fair anchors: a ranking with one global threshold on its own score.

/** A ranking's top candidates with their scores, best first. */
export type Scores = ReadonlyArray<{ readonly id: string; readonly score: number }>

/** Top 5 at or above `threshold`. */
export const above = (scores: Scores, threshold: number) => scores.filter((s) => s.score >= threshold).slice(0, 5).map((s) => s.id)

/** Thresholds tried for an anchor: its scores' range, finely. */
export const thresholds = (all: ReadonlyArray<Scores>) => {
  const values = [...new Set(all.flatMap((s) => s.slice(0, 5).map((x) => Math.round(x.score * 1000) / 1000)))].sort((a, b) => b - a)
  // From the most cautious (highest) down.
  return [Infinity, ...values]
}

// BM25, on words (folded, as the lexicon folds them) and, in scripts written without spaces, character bigrams.
const token = /[\p{L}\p{M}\p{N}]+/gu
const unspaced = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\p{Script=Thai}ー]/u

export const terms = (text: string): Array<string> => {
  const out: Array<string> = []
  for (const word of fold(text).match(token) ?? []) {
    if (!unspaced.test(word)) {
      if (Array.from(word).length >= 2 || /\d/.test(word)) out.push(word)
      continue
    }
    const chars = Array.from(word)
    if (chars.length === 1) out.push(word)
    for (let i = 0; i + 1 < chars.length; i++) out.push(chars[i]! + chars[i + 1]!)
  }
  return out
}

const k1 = 1.2
const b = 0.75

/**
 * BM25 of each post for the draft, divided by the draft's best possible
 * score (every term of the draft at saturation in a post of average length),
 * so one threshold means the same on any board and for any draft length.
 */
export const bm25Index = (posts: ReadonlyArray<{ readonly id: string; readonly text: string }>) => {
  const docs = posts.map((p) => {
    const tf = new Map<string, number>()
    const ts = terms(p.text)
    for (const t of ts) tf.set(t, (tf.get(t) ?? 0) + 1)
    return { id: p.id, tf, length: ts.length }
  })
  const df = new Map<string, number>()
  for (const d of docs) for (const t of d.tf.keys()) df.set(t, (df.get(t) ?? 0) + 1)
  const avg = docs.reduce((s, d) => s + d.length, 0) / Math.max(1, docs.length)
  const n = docs.length
  const idf = (t: string) => Math.log(1 + (n - (df.get(t) ?? 0) + 0.5) / ((df.get(t) ?? 0) + 0.5))
  return (draft: string): Scores => {
    const q = [...new Set(terms(draft))]
    const best = q.reduce((s, t) => s + idf(t) * (k1 + 1), 0)
    if (best === 0) return []
    return docs.map((d) => {
      let score = 0
      for (const t of q) {
        const f = d.tf.get(t)
        if (f !== undefined) score += idf(t) * (f * (k1 + 1)) / (f + k1 * (1 - b + b * d.length / avg))
      }
      return { id: d.id, score: score / best }
    }).filter((s) => s.score > 0).sort((x, y) => y.score - x.score || (x.id < y.id ? -1 : 1)).slice(0, 10)
  }
}
