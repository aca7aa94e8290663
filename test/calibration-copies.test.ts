import { assert, describe, expect, it, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { EmbeddingIndexes } from "../packages/server/src/embeddings/EmbeddingIndexes.js"
import { vectorLiteral } from "../packages/server/src/embeddings/Vectors.js"
import { lexiconOf } from "../packages/server/src/lexicon/lexicon.js"
import { ownBackgroundFrom, pairBelow, pValue } from "../packages/server/src/suggestions/calibration.js"
import { exactUpTo, VectorSearch } from "../packages/server/src/suggestions/VectorSearch.js"
import { onFreshDatabase } from "./support/repository.js"

/**
 * A board's background counts copies once (decision 0027), below HTTP on
 * real PostgreSQL with pgvector: on a board compared pair by pair, posts with
 * the same words (whatever their case, punctuation or markup) are one post;
 * on a board measured through the index, a text drawn several times is one
 * distance, and never a 0. And a small board's own share leaves out pairs
 * of duplicates among its posts, as long as they are fewer than half.
 */
const model = { name: "copies-model", dimensions: 8 }

/** A unit vector `angle` radians from the first axis, in the first two dimensions. */
const at = (angle: number) => [Math.cos(angle), Math.sin(angle), 0, 0, 0, 0, 0, 0]
const cosine = (a: number, b: number) => 1 - Math.cos(a - b)

const Env = onFreshDatabase(Layer.mergeAll(EmbeddingIndexes.layer, VectorSearch.layer))

interface Post {
  readonly id: string
  readonly board: string
  readonly title: string
  /** HTML, as stored. */
  readonly content: string
  readonly angle: number
}

/** The copy: far from every other post of its board. */
const copyAngle = 3
/** A board larger than `exactUpTo`: 350 texts a step apart, and 60 copies of one more. */
const step = 0.004
const walked: Array<Post> = [
  ...Array.from({ length: 350 }, (_, i) => ({ id: `w_${i}`, board: "b_walk", title: `Request ${i}`, content: "", angle: step * i })),
  ...Array.from({ length: 60 }, (_, i) => ({ id: `w_copy_${i}`, board: "b_walk", title: "Refund", content: "<p>Charged twice</p>", angle: copyAngle }))
]
/** A board compared pair by pair: 3 texts, one of them posted 3 times in other cases, punctuation and markup. */
const compared: Array<Post> = [
  { id: "c_dark_1", board: "b_pairs", title: "Dark mode", content: "<p>Please add a dark theme.</p>", angle: 0 },
  { id: "c_dark_2", board: "b_pairs", title: "DARK MODE!!", content: "<p>please add a <b>dark</b> theme</p>", angle: 0.01 },
  { id: "c_dark_3", board: "b_pairs", title: "dark  mode", content: "<p>Please, add a dark theme</p>", angle: 0.02 },
  { id: "c_pdf", board: "b_pairs", title: "Export to PDF", content: "", angle: 1 },
  { id: "c_sso", board: "b_pairs", title: "Single sign-on", content: "", angle: 2.5 }
]

/**
 * A board compared pair by pair, with near-exact copies in three pairs (one word added, replaced, removed),
 * each a hundredth of a radian from its first post, and a text of its own near the dark mode.
 */
const nearPairs: Array<Post> = [
  { id: "n_dark_1", board: "b_near", title: "Please add dark mode", content: "", angle: 0 },
  { id: "n_dark_2", board: "b_near", title: "Please add dark mode now", content: "", angle: 0.01 },
  { id: "n_pdf_1", board: "b_near", title: "Export invoices to PDF", content: "", angle: 1 },
  { id: "n_pdf_2", board: "b_near", title: "Export receipts to PDF", content: "", angle: 1.01 },
  { id: "n_sso_1", board: "b_near", title: "Sign in with Okta", content: "<p>Our whole team uses it.</p>", angle: 2 },
  { id: "n_sso_2", board: "b_near", title: "Sign in with Okta", content: "<p>Our team uses it.</p>", angle: 2.01 },
  // Two words changed: a text of its own.
  { id: "n_theme", board: "b_near", title: "Please add a night theme", content: "", angle: 0.3 }
]
/**
 * A board larger than `exactUpTo`: 160 texts a hundredth of a radian apart (two words of four in
 * common), each with a near-exact copy (one word added) a fifth of that away.
 */
const nearStep = 0.01
const nearWalked: Array<Post> = Array.from({ length: 160 }, (_, i) => [
  { id: `nw_${i}`, board: "b_near_walk", title: `Feature request ${i} ${i + 1000}`, content: "", angle: nearStep * i },
  { id: `nw_${i}_copy`, board: "b_near_walk", title: `Feature request ${i} ${i + 1000} please`, content: "", angle: nearStep * (i + 0.2) }
]).flat()

const seed = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`INSERT INTO organizations (id, name) VALUES ('org_c', 'C')`
  yield* sql`INSERT INTO boards (id, organization_id, name, slug, visibility) VALUES
    ('b_walk', 'org_c', 'Walk', 'walk', 'public'), ('b_pairs', 'org_c', 'Pairs', 'pairs', 'public'),
    ('b_near', 'org_c', 'Near', 'near', 'public'), ('b_near_walk', 'org_c', 'Near walk', 'near-walk', 'public')`
  const rows = [...walked, ...compared, ...nearPairs, ...nearWalked].map((p) => ({
    ...p,
    ...lexiconOf({ boardId: p.board, title: p.title, text: p.content.replace(/<[^>]*>/g, " "), visibility: "public" }),
    vector: vectorLiteral(at(p.angle))
  }))
  yield* sql`INSERT INTO posts (id, organization_id, board_id, title, slug, content, excerpt, visibility, source, lexicon, title_lexicon)
    SELECT r.id, 'org_c', r.board, r.title, r.id, r.content, '', 'public', 'import', r.lexicon::tsvector, r."titleLexicon"::tsvector
    FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(id text, board text, title text, content text, lexicon text, "titleLexicon" text)`
  yield* sql`INSERT INTO post_embeddings (post_id, model, dimensions, embedding, source_hash)
    SELECT r.id, ${model.name}, ${model.dimensions}, r.vector::vector, 'x'
    FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(id text, vector text)`
  yield* sql`ANALYZE posts`
  yield* sql`ANALYZE post_embeddings`
}).pipe(Effect.orDie)

layer(Env, { timeout: 60_000, excludeTestServices: true })("a board's nearest-neighbour distances", (it) => {
  it.effect("count posts with the same words once, on a board compared pair by pair", () =>
    Effect.gen(function*() {
      yield* seed
      const indexes = yield* EmbeddingIndexes
      const vectors = yield* VectorSearch
      assert.strictEqual(yield* indexes.ensureIndex(model, { concurrently: false }), true)
      const distances = yield* vectors.neighbourDistances(model, "b_pairs", 200)
      // Three texts: the PDF export (nearest: a dark mode), the dark mode (drawn once, as its first post; nearest:
      // the PDF export, not another dark mode) and the sign-on (nearest: the PDF export).
      expect(distances.length).toBe(3)
      const expected = [cosine(0.02, 1), cosine(0, 1), cosine(1, 2.5)]
      expected.forEach((d, i) => expect(distances[i]!, `${i}`).toBeCloseTo(d, 5))
    }))

  it.effect("count a text drawn several times once, and never as a 0, on a board measured through the index", () =>
    Effect.gen(function*() {
      assert.isAbove(walked.length, exactUpTo)
      const vectors = yield* VectorSearch
      const distances = yield* vectors.neighbourDistances(model, "b_walk", 200)
      // The copy's nearest other text is the farthest request: once at most. Every other text's is a next request.
      const copy = cosine(copyAngle, step * 349)
      const [requests, copies] = [distances.filter((d) => d < 1e-4), distances.filter((d) => d >= 1e-4)]
      expect(copies.length).toBeLessThanOrEqual(1)
      for (const d of copies) expect(d).toBeCloseTo(copy, 4)
      for (const d of requests) expect(d).toBeGreaterThan(cosine(0, step) / 2)
      // 200 drawn of 410 posts: some of the 60 copies are among them (missing all of them has a chance under 1e-30).
      expect(distances.length).toBeLessThan(200)
    }))

  it.effect("count near-exact copies once, on a board compared pair by pair", () =>
    Effect.gen(function*() {
      const vectors = yield* VectorSearch
      const distances = yield* vectors.neighbourDistances(model, "b_near", 200)
      // One post of each pair is drawn (its first), and its nearest neighbour is never the other: the dark mode's
      // is the night theme (two words changed), the PDF export's too, the sign-on's the receipts; the night
      // theme's is the dark mode's copy. A hundredth of a radian (5e-5) is nowhere.
      expect(distances.length).toBe(4)
      const expected = [cosine(0.3, 0.01), cosine(0, 0.3), cosine(1, 0.3), cosine(2, 1.01)].sort((a, b) => a - b)
      expected.forEach((d, i) => expect(distances[i]!, `${i}`).toBeCloseTo(d, 5))
    }))

  it.effect("count near-exact copies once, on a board measured through the index", () =>
    Effect.gen(function*() {
      assert.isAbove(nearWalked.length, exactUpTo)
      const vectors = yield* VectorSearch
      const distances = yield* vectors.neighbourDistances(model, "b_near_walk", 200)
      // Every text's nearest neighbour is the next or the previous one's copy (4/5 of a step), never its own (1/5).
      for (const d of distances) expect(d).toBeGreaterThan(cosine(0, nearStep * 0.6))
      // 200 drawn of 320 posts: about 60 pairs are drawn whole, and count once (drawing no pair whole: under 1e-30).
      expect(distances.length).toBeLessThan(200)
    }))
})

describe("a small board's own share", () => {
  const pool: ReadonlyArray<number> = []
  // Two pairs of duplicates among nine posts: 0.1, 0.12 (once each, as their copies would be).
  const withPairs = { board: [0.1, 0.12, 0.5, 0.6, 0.6, 0.7, 0.7, 0.8, 0.9], pool, posts: 9 }

  it("leaves out distances under half of its median", () => {
    assert.isBelow(withPairs.board.length, ownBackgroundFrom)
    // 0.3 is below every distance between distinct requests of the board: the two pairs do not count.
    assert.strictEqual(pValue(withPairs, 0.3), 0)
    assert.strictEqual(pValue(withPairs, 0.11), 0)
    assert.strictEqual(pairBelow, 0.5)
    assert.strictEqual(pValue(withPairs, 0.55), 1 / 7)
    assert.strictEqual(pValue({ ...withPairs, board: [0.2, 0.25, 0.5, 0.6, 0.6, 0.7, 0.7, 0.8, 0.9] }, 0.3), 0)
  })

  it("keeps a 0: two texts with one vector, which the model cannot tell apart", () => {
    const unread = { board: [0, 0, 0.5, 0.6, 0.6, 0.7, 0.7, 0.8, 0.9], pool, posts: 9 }
    // A draft with that vector too is as close to them as they are to each other.
    assert.strictEqual(pValue(unread, 0), 2 / 9)
    assert.strictEqual(pValue(unread, 0.3), 2 / 9)
    assert.strictEqual(pValue({ ...unread, board: [0, 0, 0.1, 0.12, 0.6, 0.6, 0.7, 0.8, 0.9] }, 0.3), 2 / 7)
  })

  it("counts them all when they are half the board or more: a board about one thing", () => {
    const close = { board: [0.1, 0.1, 0.1, 0.1, 0.1, 0.15, 0.5, 0.6, 0.7], pool, posts: 9 }
    assert.strictEqual(pValue(close, 0.12), 5 / 9)
  })

  it("is at least the pool's p-value, and with neither a board nor a pool, 1", () => {
    const pooled = { ...withPairs, pool: Array.from({ length: 49 }, (_, i) => 0.1 + i * 0.01) }
    assert.strictEqual(pValue(pooled, 0.305), (1 + 21) / 50)
    assert.strictEqual(pValue({ board: [], pool, posts: 0 }, 0.3), 1)
  })
})
