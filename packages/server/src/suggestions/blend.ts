import { fuse } from "./fuse.js"

/** A post the semantic half found, with how it stands out on its board (`calibration.ts`). */
export interface Near {
  readonly id: string
  /** Cosine distance to the draft. */
  readonly distance: number
  /** `pValue` of the distance on the board's background. */
  readonly p: number
}

/** Near posts the semantic half looks at: those it may show, and the others each is compared with (`gapOf`). */
export const nearLimit = 5

/**
 * When a near post is shown (decision 0023). Fitted on one half of the
 * labelled drafts (`npm run quality -- --fit`).
 */
export interface Blend {
  /**
   * A near post whose p is at most `alone`, and that is closer than the
   * draft's other near posts by at least `gap` (`gapOf`), is shown on its
   * meaning alone.
   */
  readonly alone: number
  readonly gap: number
  /** One whose p is at most this is shown when the lexical ranking has it too, with at least `wordsFloor` coverage. */
  readonly withWords: number
  readonly wordsFloor: number
  /**
   * Once the words show posts, a near post is shown when it is at most this
   * many times as far as the nearest post the words show: the words found
   * the request, the meaning finds the rest of its posts (a topic asked
   * several times in other words). 0: never.
   */
  readonly asNear: number
  /** …when the words show at least this many posts. */
  readonly asNearFrom: number
}

export const blend: Blend = { alone: 0.2, gap: 0.3, withWords: 0.05, wordsFloor: 0.1, asNear: 1.1, asNearFrom: 3 }

/**
 * How much closer the `i`-th near post is than the draft's next four others,
 * as a share of their mean distance: 0.2 is 20 % closer. A duplicate stands
 * out from the rest; a draft with none has several posts about as near.
 */
export const gapOf = (near: ReadonlyArray<Near>, i: number) => {
  const others = near.filter((_, j) => j !== i).slice(0, 4)
  // The board's only embedded post: nothing else is near.
  if (others.length === 0) return 1
  const mean = others.reduce((sum, n) => sum + n.distance, 0) / others.length
  return mean === 0 ? 0 : (mean - near[i]!.distance) / mean
}

/**
 * The ids of the answer from both halves: `shown`, the lexical answer;
 * `ranked`, every lexical candidate with its coverage (before the lexical
 * threshold); `near`, the nearest posts (at most `nearLimit`), closest first.
 * None farther than `maxDistance` (`SUGGESTIONS_MAX_DISTANCE`) is shown, but
 * all are compared with. The near posts shown are fused with the lexical answer by reciprocal rank
 * fusion, the lexical list first: a post both find rises, and a tie goes to
 * the words.
 */
export const merge = (
  shown: ReadonlyArray<string>,
  ranked: ReadonlyArray<{ readonly id: string; readonly coverage: number }>,
  near: ReadonlyArray<Near>,
  limit: number,
  maxDistance: number,
  b: Blend = blend
): Array<string> => {
  const coverage = new Map(ranked.map((r) => [r.id, r.coverage]))
  const found = near.filter((n) => shown.includes(n.id))
  const asFar = b.asNear > 0 && found.length > 0 && shown.length >= b.asNearFrom ? Math.min(...found.map((n) => n.distance)) * b.asNear : -1
  const meant = near.filter((n, i) =>
    n.distance <= maxDistance &&
    ((n.p <= b.alone && gapOf(near, i) >= b.gap) || (n.p <= b.withWords && (coverage.get(n.id) ?? 0) >= b.wordsFloor) ||
      n.distance <= asFar)
  ).map((n) => n.id)
  if (meant.length === 0) return shown.slice(0, limit)
  return fuse([shown.map((id) => ({ id })), meant.map((id) => ({ id }))], limit).map((x) => x.id)
}
