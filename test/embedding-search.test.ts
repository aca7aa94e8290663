import { assert, describe, expect, it, layer } from "@effect/vitest"
import { Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { EmbeddingIndexes } from "../packages/server/src/embeddings/EmbeddingIndexes.js"
import { indexName, vectorLiteral } from "../packages/server/src/embeddings/Vectors.js"
import { VectorSearch } from "../packages/server/src/suggestions/VectorSearch.js"
import { onFreshDatabase } from "./support/repository.js"

/**
 * The vector search below HTTP, on real PostgreSQL with pgvector: the model's
 * partial HNSW index is used, and its filters (organization, board,
 * visibility, model) never make it answer short, thanks to the iterative
 * index scan, even when every one of the index's nearest rows is filtered out.
 */
const model = { name: "unit-model", dimensions: 8 }
const other = { name: "other-model", dimensions: 8 }

/** A unit vector `angle` radians away from the query, in the first two dimensions. */
const at = (angle: number) => [Math.cos(angle), Math.sin(angle), 0, 0, 0, 0, 0, 0]
const query = at(0)

const Env = onFreshDatabase(Layer.mergeAll(EmbeddingIndexes.layer, VectorSearch.layer))

const seed = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`INSERT INTO organizations (id, name) VALUES ('org_s', 'S'), ('org_t', 'T')`
  yield* sql`INSERT INTO boards (id, organization_id, name, slug, visibility) VALUES
    ('b_big', 'org_s', 'Big', 'big', 'public'), ('b_small', 'org_s', 'Small', 'small', 'public'),
    ('b_hidden', 'org_s', 'Hidden', 'hidden', 'private'), ('b_t', 'org_t', 'T', 't', 'public')`
  const posts: Array<{ id: string; board: string; org: string; visibility: string; angle: number; model?: typeof model }> = [
    // 3,000 posts nearer to the query than any on the small board: every row the index finds first is filtered out.
    ...Array.from({ length: 3_000 }, (_, i) => ({ id: `big_${i}`, board: "b_big", org: "org_s", visibility: "public", angle: 0.0002 * i })),
    // As many on the small board, all farther: the planner walks the index (a board is half the table), not the board.
    ...Array.from({ length: 3_000 }, (_, i) => ({ id: `small_${i}`, board: "b_small", org: "org_s", visibility: "public", angle: 1 + 0.0001 * i })),
    { id: "small_private", board: "b_small", org: "org_s", visibility: "private", angle: 0.9 },
    { id: "small_other_model", board: "b_small", org: "org_s", visibility: "public", angle: 0.9, model: other },
    { id: "hidden", board: "b_hidden", org: "org_s", visibility: "public", angle: 0.9 },
    { id: "t_post", board: "b_t", org: "org_t", visibility: "public", angle: 0.9 }
  ]
  const rows = posts.map((p) => ({ ...p, vector: vectorLiteral(at(p.angle)), model: p.model ?? model }))
  yield* sql`INSERT INTO posts (id, organization_id, board_id, title, slug, content, excerpt, visibility, source)
    SELECT r.id, r.org, r.board, r.id, r.id, '', '', r.visibility, 'import'
    FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(id text, org text, board text, visibility text)`
  yield* sql`INSERT INTO post_embeddings (post_id, model, dimensions, embedding, source_hash)
    SELECT r.id, r.name, r.dimensions, r.vector::vector, 'x'
    FROM jsonb_to_recordset(${JSON.stringify(rows.map((r) => ({ id: r.id, vector: r.vector, ...r.model })))}::jsonb)
      AS r(id text, vector text, name text, dimensions int)`
  yield* sql`ANALYZE posts`
  yield* sql`ANALYZE post_embeddings`
}).pipe(Effect.orDie)

const indexScans = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`SELECT pg_stat_clear_snapshot()`
  const [row] = yield* sql<{ n: number }>`SELECT idx_scan::int AS n FROM pg_stat_user_indexes WHERE indexrelname = ${indexName(model)}`
  return row?.n ?? 0
}).pipe(Effect.orDie)

/** A backend reports its statistics when it goes idle, within seconds: wait for the count to pass `n`. */
const indexScansAbove = (n: number) =>
  indexScans.pipe(
    Effect.flatMap((scans) => scans > n ? Effect.succeed(scans) : Effect.fail("not yet")),
    Effect.retry({ times: 100, schedule: Schedule.spaced("200 millis") }),
    Effect.orElseSucceed(() => n)
  )

layer(Env, { timeout: 60_000, excludeTestServices: true })("the vector search", (it) => {
  it.effect("creates the model's partial HNSW index once, and finds the index valid after", () =>
    Effect.gen(function*() {
      yield* seed
      const embeddingIndexes = yield* EmbeddingIndexes
      assert.strictEqual(yield* embeddingIndexes.ensureIndex(model, { concurrently: true }), true)
      assert.strictEqual(yield* embeddingIndexes.ensureIndex(model, { concurrently: true }), true)
      const sql = yield* SqlClient.SqlClient
      const indexes = yield* sql<{ indexdef: string }>`SELECT indexdef FROM pg_indexes WHERE indexname = ${indexName(model)}`
      expect(indexes.map((i) => i.indexdef)).toEqual([
        `CREATE INDEX ${indexName(model)} ON public.post_embeddings USING hnsw (((embedding)::vector(8)) vector_cosine_ops) WHERE ((model = 'unit-model'::text) AND (dimensions = 8))`
      ])
      // Past 2,000 dimensions the index is on half precision; past 4,000 there is none.
      const large = { name: "large", dimensions: 3_072 }
      assert.strictEqual(yield* embeddingIndexes.ensureIndex(large, { concurrently: false }), true)
      const [halfvec] = yield* sql<{ indexdef: string }>`SELECT indexdef FROM pg_indexes WHERE indexname = ${indexName(large)}`
      expect(halfvec?.indexdef).toContain("USING hnsw (((embedding)::halfvec(3072)) halfvec_cosine_ops) WHERE ((model = 'large'::text) AND (dimensions = 3072))")
      assert.strictEqual(yield* embeddingIndexes.ensureIndex({ name: "huge", dimensions: 5_000 }, { concurrently: false }), false)
    }))

  it.effect("answers in full, through the index, from a board whose posts are all farther than 3,000 of another board's", () =>
    Effect.gen(function*() {
      const vectors = yield* VectorSearch
      const before = yield* indexScans
      const near = yield* vectors.nearest(model, { organizationId: "org_s", boardId: "b_small", vector: query, limit: 5 })
      expect(near.map((n) => n.id)).toEqual(["small_0", "small_1", "small_2", "small_3", "small_4"])
      for (const [i, n] of near.entries()) expect(n.distance).toBeCloseTo(1 - Math.cos(1 + 0.0001 * i), 5)
      expect(yield* indexScansAbove(before)).toBeGreaterThan(before)
    }))

  it.effect("never answers with a private post, a private board's, another organization's, or another model's vector", () =>
    Effect.gen(function*() {
      const vectors = yield* VectorSearch
      const ids = (boardId: string, organizationId = "org_s") =>
        vectors.nearest(model, { organizationId, boardId, vector: query, limit: 5 }).pipe(Effect.map((near) => near.map((n) => n.id)))
      expect(yield* ids("b_small")).not.toContain("small_private")
      expect(yield* ids("b_small")).not.toContain("small_other_model")
      expect(yield* ids("b_hidden")).toEqual([])
      expect(yield* ids("b_t")).toEqual([])
      expect(yield* ids("b_t", "org_t")).toEqual(["t_post"])
      expect(yield* vectors.nearest(other, { organizationId: "org_s", boardId: "b_small", vector: query, limit: 5 }).pipe(
        Effect.map((near) => near.map((n) => n.id))
      )).toEqual(["small_other_model"])
    }))
})

describe("vector literals", () => {
  it("are pgvector's text form", () => {
    expect(vectorLiteral([1, -0.5, 2e-7])).toBe("[1,-0.5,2e-7]")
  })
})
