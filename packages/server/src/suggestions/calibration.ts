/**
 * Which near posts stand out (decision 0023): a draft's distance to a post is
 * compared with how close the board's posts are to each other, for the same
 * model, instead of with one absolute distance. Models spread distances each
 * in its own way; a board's own posts say what "close" means there.
 */

/** A board's background for one model. */
export interface Background {
  /** Distances from a sample of the board's public posts to their nearest neighbour on the board, ascending. */
  readonly board: ReadonlyArray<number>
  /** The pool of the board's organization for the model (`poolOf`), ascending; empty when there is none. */
  readonly pool: ReadonlyArray<number>
  /** The board's public embedded posts when it was measured; 0 when it was not yet. */
  readonly posts: number
}

/**
 * Boards of at most this many posts are searched exactly, every post
 * compared: a few milliseconds, and no approximate index to miss the nearest.
 */
export const exactSearchUpTo = 2_000

/** A board with fewer sampled distances than this borrows its organization's pool. */
export const ownBackgroundFrom = 20
/**
 * On such a board, a distance under this share of its median is a pair of
 * posts asking the same thing, not how close its requests usually are: it is
 * left out of the board's own share (decision 0027).
 */
export const pairBelow = 0.5
/** Values each board gives its organization's pool: evenly spaced quantiles of its own. */
export const poolPerBoard = 25
/** Boards the pool is made of, at most: it stays small whatever the number of boards. */
export const poolBoards = 200

/** How many values of an ascending list are at most `d` (or, `strictly`, below it). */
const atMost = (sorted: ReadonlyArray<number>, d: number, strictly = false) => {
  let lo = 0
  let hi = sorted.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (strictly ? sorted[mid]! < d : sorted[mid]! <= d) lo = mid + 1
    else hi = mid
  }
  return lo
}

/**
 * How ordinary a distance is on the board, in [0, 1]: the conformal p-value
 * of `d` among the board's nearest-neighbour distances, (1 + #{b ≤ d}) / (m + 1).
 * A draft with no duplicate is one more post of the board, so its distance to
 * its nearest post falls anywhere among the posts' own: the chance that its p
 * is at most α is at most about α, whatever the model. A duplicate is closer
 * to its original than posts usually are to each other: a small p.
 *
 * A board with fewer than `ownBackgroundFrom` sampled distances has too few
 * for that: `d` must then be below the share p of its own (`ownShare`: 0
 * when it is closer than any two of its posts are to each other, pairs of
 * duplicates aside) and, when the organization's other boards have a
 * background of their own, as rare among their pool. A board with a single
 * post has none of its own: the pool alone, or 1.
 */
export const pValue = (background: Background, d: number): number => {
  const { board, pool } = background
  if (board.length >= ownBackgroundFrom) return (1 + atMost(board, d)) / (board.length + 1)
  const own = board.length === 0 ? (pool.length === 0 ? 1 : 0) : ownShare(board, d)
  return pool.length === 0 ? own : Math.max(own, (1 + atMost(pool, d)) / (pool.length + 1))
}

/** Distances this small are between one vector twice (single-precision storage). */
const sameVector = 1e-6

/**
 * The share of a small board's distances at most `d`, those under `pairBelow`
 * of its median left out. A few posts that are duplicates of each other (real
 * ones, or a visitor's) put small distances into a board of a few posts: two
 * of nine would otherwise hold every draft's p above 0.2. The median moves
 * only when they are half the board.
 *
 * A distance of 0 stays: copies are one post already (`VectorSearch`), so
 * two posts with one vector are different texts the model cannot tell apart
 * (texts in a language it does not read). A draft with that vector is no
 * closer to them than they are to each other; left out, it would be shown
 * both, at random.
 */
const ownShare = (board: ReadonlyArray<number>, d: number): number => {
  const cut = pairBelow * board[board.length >> 1]!
  const same = atMost(board, sameVector)
  const pairs = Math.max(0, atMost(board, cut, true) - same)
  const pairsUpToD = d >= cut ? pairs : Math.max(0, atMost(board, d) - same)
  return (atMost(board, d) - pairsUpToD) / (board.length - pairs)
}

/** `count` evenly spaced quantiles of an ascending list (all of it when shorter). */
export const quantiles = (sorted: ReadonlyArray<number>, count: number): Array<number> =>
  sorted.length <= count
    ? [...sorted]
    : Array.from({ length: count }, (_, i) => sorted[Math.round((i + 0.5) * sorted.length / count - 0.5)]!)

/**
 * An organization's pool: `poolPerBoard` quantiles of each of its boards
 * that has a background of its own (the first `poolBoards` given), so that
 * every board weighs the same, ascending. Never another organization's
 * boards (decision 0027): its posts are not this one's to decide with.
 */
export const poolOf = (boards: ReadonlyArray<ReadonlyArray<number>>): Array<number> =>
  boards.filter((b) => b.length >= ownBackgroundFrom).slice(0, poolBoards).flatMap((b) => quantiles(b, poolPerBoard)).sort((a, b) => a - b)
