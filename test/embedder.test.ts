import { assert, describe, expect, it, layer } from "@effect/vitest"
import { Clock, ConfigProvider, Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { mkdtemp, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Core } from "../packages/server/src/App.js"
import * as ServerConfig from "../packages/server/src/config/ServerConfig.js"
import { batchSize, EmbeddingRound, maxRetryMs } from "../packages/server/src/embeddings/EmbeddingRound.js"
import { EmbeddingQueue } from "../packages/server/src/embeddings/EmbeddingQueue.js"
import { embeddingInput, Embeddings, inInputOrder, vectorProblem } from "../packages/server/src/embeddings/Embeddings.js"
import { startClock } from "./support/clock.js"
import { createDatabase } from "./support/database.js"
import { type FakeEmbeddings, startFakeEmbeddings } from "./support/embeddings.js"

describe("an embeddings answer", () => {
  const answer = (indexes: ReadonlyArray<number>, size = 3) => ({ data: indexes.map((index) => ({ index, embedding: Array(size).fill(index) })) })
  it("is put in input order by its indexes", () => {
    expect(Effect.runSync(inInputOrder(answer([2, 0, 1]), 3, 3))).toEqual([[0, 0, 0], [1, 1, 1], [2, 2, 2]])
  })

  it("is refused when its indexes do not match the inputs, or a vector has another size", () => {
    const reasons = [
      inInputOrder(answer([0, 1]), 3, 3),
      inInputOrder(answer([0, 0, 1]), 3, 3),
      inInputOrder(answer([1, 2, 3]), 3, 3),
      inInputOrder(answer([0, 1, 2], 4), 3, 3),
      inInputOrder({ data: [{ index: 0, embedding: [1, Number.NaN, 0] }] }, 1, 3)
    ].map((effect) => Effect.runSync(Effect.match(effect, { onFailure: (e) => e.reason, onSuccess: () => "accepted" })))
    expect(reasons).toEqual([
      "expected 3 embeddings, got 2",
      "the answer's indexes do not match the 3 inputs",
      "the answer's indexes do not match the 3 inputs",
      "a vector has 4 dimensions, EMBEDDINGS_DIMENSIONS is 3",
      "a vector has a value that is not a finite number"
    ])
  })

  it("vector is unusable when pgvector would refuse it: past single precision, or past half precision where the index is halfvec", () => {
    expect(vectorProblem([1, -3.4028234e38, 0], 3)).toBeUndefined()
    expect(vectorProblem([1, 1e39, 0], 3)).toBe("a vector has a value beyond single precision (over 3.4e38)")
    expect(vectorProblem([1, -1e39, 0], 3)).toBe("a vector has a value beyond single precision (over 3.4e38)")
    expect(vectorProblem([1, Infinity, 0], 3)).toBe("a vector has a value that is not a finite number")
    expect(vectorProblem([1, "0.5", 0], 3)).toBe("a vector is not a list of numbers")
    expect(vectorProblem("AAAA", 3)).toBe("a vector is not a list of numbers")
    // 3,000 dimensions are indexed as halfvec (`indexKind`, `Vectors.ts`): 65504 is its largest value.
    const wide = (x: number) => Array.from({ length: 3_000 }, (_, i) => (i === 0 ? x : 0))
    expect(vectorProblem(wide(65_504), 3_000)).toBeUndefined()
    expect(vectorProblem(wide(-70_000), 3_000)).toBe("a vector has a value beyond half precision (over 65504), which the index of 3000 dimensions stores")
    expect(vectorProblem(Array.from({ length: 1_536 }, () => 70_000), 1_536)).toBeUndefined()
  })

  it("input is the title, a blank line and the plain text, cut at 2,000 code points", () => {
    expect(embeddingInput("Dark mode", "Please")).toBe("Dark mode\n\nPlease")
    expect(embeddingInput("Dark mode", "  ")).toBe("Dark mode")
    const long = embeddingInput("T", "😀".repeat(3_000))
    expect(Array.from(long)).toHaveLength(2_000)
    expect(long.endsWith("😀")).toBe(true)
  })
})

class Fake extends Context.Service<Fake, FakeEmbeddings>()("test/Fake") {}

const baseMs = 1_000
const posts = batchSize + 8

/**
 * Core on a fresh database with `posts` public posts and one private one on a
 * public board, two public posts on a private board, the embedding round,
 * and a fake API.
 */
const Env = Layer.unwrap(Effect.gen(function*() {
  const db = yield* Effect.acquireRelease(Effect.promise(createDatabase), (db) => Effect.promise(db.drop))
  const fake = yield* Effect.acquireRelease(Effect.promise(() => startFakeEmbeddings({ dimensions: 16 })), (f) => Effect.promise(() => f.close()))
  const fixture = {
    organizations: [{
      id: "org_e",
      name: "E",
      statuses: [{ id: "st_e", name: "Open" }],
      boards: [
        { id: "b_e", name: "Board", slug: "board", visibility: "public" },
        { id: "b_hidden", name: "Hidden", slug: "hidden", visibility: "private" }
      ],
      posts: [
        ...Array.from({ length: posts }, (_, i) => ({ id: `p_${String(i).padStart(2, "0")}`, boardId: "b_e", title: `Post number ${i}`, content: `<p>Text ${i}</p>` })),
        { id: "p_private", boardId: "b_e", title: "Private", content: "<p>hidden</p>", visibility: "private" },
        // Public posts of a private board: never suggested, so never sent to a third party.
        { id: "p_hidden_1", boardId: "b_hidden", title: "Hidden roadmap 1", content: "<p>not for the API</p>" },
        { id: "p_hidden_2", boardId: "b_hidden", title: "Hidden roadmap 2", content: "<p>not for the API</p>" }
      ]
    }]
  }
  const dir = yield* Effect.promise(() => mkdtemp(join(tmpdir(), "hearken-embedder-")))
  yield* Effect.promise(() => writeFile(join(dir, "fixture.json"), JSON.stringify(fixture)))
  const env = {
    DATABASE_URL: db.url,
    SEED_FILE: join(dir, "fixture.json"),
    LOG_LEVEL: "none",
    EMBEDDINGS_URL: fake.url,
    EMBEDDINGS_MODEL: "fake-1",
    EMBEDDINGS_DIMENSIONS: "16",
    EMBEDDINGS_RETRY_BASE_MS: String(baseMs)
  }
  return Layer.mergeAll(EmbeddingRound.layerNoDeps, Layer.succeed(Fake, fake)).pipe(
    Layer.provideMerge(Core),
    Layer.provideMerge(ServerConfig.layer),
    Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env })))
  )
}))

interface Row {
  readonly postId: string
  readonly lastError: string | null
  readonly attempts: number
  readonly retryMs: number | null
  readonly embedded: boolean
  readonly leased: boolean
}

const rows = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<Row>`SELECT post_id AS "postId", last_error AS "lastError", attempts, (extract(epoch FROM retry_at) * 1000)::float8 AS "retryMs",
      embedding IS NOT NULL AS embedded, lease_token IS NOT NULL AS leased
    FROM post_embeddings ORDER BY post_id`
}).pipe(Effect.orDie)

const reset = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DELETE FROM post_embeddings`
  const fake = yield* Fake
  fake.mode = "ok"
  fake.rejectInputsContaining = undefined
  fake.overflowInputsContaining = undefined
}).pipe(Effect.orDie)

/** No embeddings, the API answering, virtual time at today's: each test starts here. */
const fresh = Effect.gen(function*() {
  yield* reset
  const t0 = yield* startClock
  return { fake: yield* Fake, round: yield* EmbeddingRound, t0 }
})
const virtual = <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.provide(self, TestClock.layer())

layer(Env, { timeout: 60_000, excludeTestServices: true })("the embedding round, on virtual time", (it) => {
  it.effect("embeds every public post in batches, never the private one, and each once", () =>
    virtual(Effect.gen(function*() {
      const { fake, round } = yield* fresh
      const before = fake.inputs.length
      assert.deepStrictEqual(yield* round.run(), { claimed: batchSize, ok: true })
      assert.deepStrictEqual(yield* round.run(), { claimed: posts - batchSize, ok: true })
      assert.deepStrictEqual(yield* round.run(), { claimed: 0, ok: true })
      const all = yield* rows
      expect(all.map((r) => r.postId)).not.toContain("p_private")
      expect(all.filter((r) => r.embedded && !r.leased)).toHaveLength(posts)
      const sent = fake.inputs.slice(before)
      expect(sent).toHaveLength(posts)
      expect(new Set(sent).size).toBe(posts)
      expect(sent).toContain("Post number 7\n\nText 7")
    })))

  it.effect("retries a failed post on the backoff schedule of the Clock, doubling, then stores it", () =>
    virtual(Effect.gen(function*() {
      const { fake, round, t0 } = yield* fresh
      fake.mode = "error"
      const only = ["p_03"]
      assert.deepStrictEqual(yield* round.run(only), { claimed: 1, ok: false })
      let [row] = yield* rows
      assert.deepStrictEqual([row!.attempts, row!.retryMs, row!.embedded], [1, t0 + baseMs, false])

      // Not due a millisecond early, neither to the post's own round nor to the sweep.
      yield* TestClock.adjust(baseMs - 1)
      assert.strictEqual((yield* round.run(only)).claimed, 0)
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(yield* round.run(only), { claimed: 1, ok: false })
      ;[row] = yield* rows
      const t1 = yield* Clock.currentTimeMillis
      assert.deepStrictEqual([row!.attempts, row!.retryMs], [2, t1 + 2 * baseMs])

      yield* TestClock.adjust(2 * baseMs)
      fake.mode = "ok"
      assert.deepStrictEqual(yield* round.run(only), { claimed: 1, ok: true })
      ;[row] = yield* rows
      assert.deepStrictEqual([row!.attempts, row!.retryMs, row!.embedded], [0, null, true])
    })))

  it.effect("never waits longer than an hour between tries", () =>
    virtual(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { fake, round, t0 } = yield* fresh
      yield* sql`INSERT INTO post_embeddings (post_id, model, dimensions, attempts, retry_at)
        VALUES ('p_05', 'fake-1', 16, 30, ${new Date(t0).toISOString()}::timestamptz)`
      fake.mode = "error"
      assert.deepStrictEqual(yield* round.run(["p_05"]), { claimed: 1, ok: false })
      const [row] = yield* rows
      assert.deepStrictEqual([row!.attempts, row!.retryMs], [31, t0 + maxRetryMs])
    })))

  it.effect("re-embeds a post whose title or content changed, and only that one", () =>
    virtual(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { fake, round } = yield* fresh
      while ((yield* round.run()).claimed > 0) { /* back-fill */ }
      yield* sql`UPDATE posts SET title = 'Post number 9, renamed' WHERE id = 'p_09'`
      const before = fake.inputs.length
      assert.deepStrictEqual(yield* round.run(), { claimed: 1, ok: true })
      expect(fake.inputs.slice(before)).toEqual(["Post number 9, renamed\n\nText 9"])
    })))

  it.effect("splits a batch the API rejects until the post it cannot take is alone, and stores the others", () =>
    virtual(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { fake, round, t0 } = yield* fresh
      // A generator's `finally` does not run when a yielded effect fails: the title is put back by a finalizer.
      yield* Effect.acquireRelease(
        sql`UPDATE posts SET title = 'Post number 7 (too long for the model)' WHERE id = 'p_07'`,
        () => Effect.orDie(sql`UPDATE posts SET title = 'Post number 7' WHERE id = 'p_07'`)
      )
      fake.rejectInputsContaining = "too long"
      // The API answers: a post it refuses is no reason for the loop to wait.
      assert.deepStrictEqual(yield* round.run(), { claimed: batchSize, ok: true })
      const all = yield* rows
      const refused = all.filter((r) => !r.embedded)
      assert.deepStrictEqual(refused.map((r) => [r.postId, r.attempts, r.retryMs, r.leased]), [["p_07", 1, t0 + baseMs, false]])
      expect(all.filter((r) => r.embedded)).toHaveLength(batchSize - 1)
    })))

  it.effect("fails only the post whose vector overflows single precision (1e39), with its error, an attempt and backoff; stores the others", () =>
    virtual(Effect.gen(function*() {
      const { fake, round, t0 } = yield* fresh
      fake.overflowInputsContaining = "Post number 7\n"
      // The API answers: the loop need not slow down.
      assert.deepStrictEqual(yield* round.run(), { claimed: batchSize, ok: true })
      let all = yield* rows
      const failed = all.filter((r) => !r.embedded)
      assert.deepStrictEqual(
        failed.map((r) => [r.postId, r.lastError, r.attempts, r.retryMs, r.leased]),
        [["p_07", "a vector has a value beyond single precision (over 3.4e38)", 1, t0 + baseMs, false]]
      )
      assert.deepStrictEqual(all.filter((r) => r.embedded).map((r) => [r.lastError, r.attempts, r.leased]), Array(batchSize - 1).fill([null, 0, false]))

      // Due again after its backoff, and stored once the API gives it a vector that fits.
      fake.overflowInputsContaining = undefined
      yield* TestClock.adjust(baseMs)
      assert.deepStrictEqual(yield* round.run(["p_07"]), { claimed: 1, ok: true })
      all = yield* rows
      assert.deepStrictEqual(all.find((r) => r.postId === "p_07"), { postId: "p_07", lastError: null, attempts: 0, retryMs: null, embedded: true, leased: false })
    })))

  it.effect("fails only the post whose vector the database refuses, when the rest of the batch is fine", () =>
    virtual(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { round, t0 } = yield* fresh
      // A refusal no check in the process foresees: a constraint on this database's rows, dropped whatever happens.
      yield* Effect.acquireRelease(
        sql`ALTER TABLE post_embeddings ADD CONSTRAINT test_refuses_p_03 CHECK (embedding IS NULL OR post_id <> 'p_03')`,
        () => Effect.orDie(sql`ALTER TABLE post_embeddings DROP CONSTRAINT test_refuses_p_03`)
      )
      assert.deepStrictEqual(yield* round.run(), { claimed: batchSize, ok: true })
      const all = yield* rows
      assert.deepStrictEqual(
        all.filter((r) => !r.embedded).map((r) => [r.postId, r.lastError, r.attempts, r.retryMs, r.leased]),
        [["p_03", "the database refused its vector (SQLSTATE 23514)", 1, t0 + baseMs, false]]
      )
      expect(all.filter((r) => r.embedded)).toHaveLength(batchSize - 1)
    })))

  it.effect("never sends the API a post of a private board, nor of a board made private; sends them once it is public", () =>
    virtual(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { fake, round } = yield* fresh
      const hidden = (inputs: ReadonlyArray<string>) => inputs.filter((input) => input.startsWith("Hidden roadmap"))
      const before = fake.inputs.length
      while ((yield* round.run()).claimed > 0) { /* back-fill */ }
      expect(hidden(fake.inputs)).toEqual([])
      expect((yield* rows).map((r) => r.postId)).not.toContain("p_hidden_1")

      // A board made private: its changed post is due, and still not sent.
      yield* Effect.acquireRelease(
        sql`UPDATE boards SET visibility = 'private' WHERE id = 'b_e'`,
        () => Effect.orDie(sql`UPDATE boards SET visibility = 'public' WHERE id = 'b_e'`)
      )
      yield* Effect.acquireRelease(
        sql`UPDATE posts SET title = 'Post number 11, changed in private' WHERE id = 'p_11'`,
        () => Effect.orDie(sql`UPDATE posts SET title = 'Post number 11' WHERE id = 'p_11'`)
      )
      assert.deepStrictEqual(yield* round.run(), { claimed: 0, ok: true })
      assert.deepStrictEqual(yield* round.run(["p_11"]), { claimed: 0, ok: true })
      expect(fake.inputs.filter((input) => input.includes("changed in private"))).toEqual([])

      // The control: the same posts go out once their board is public.
      yield* Effect.acquireRelease(
        sql`UPDATE boards SET visibility = 'public' WHERE id = 'b_hidden'`,
        () => Effect.orDie(sql`UPDATE boards SET visibility = 'private' WHERE id = 'b_hidden'`)
      )
      assert.deepStrictEqual(yield* round.run(), { claimed: 2, ok: true })
      expect(hidden(fake.inputs.slice(before)).sort()).toEqual(["Hidden roadmap 1\n\nnot for the API", "Hidden roadmap 2\n\nnot for the API"])
    })))

  it.effect("two workers at once never lease the same post, and together embed each once", () =>
    virtual(Effect.gen(function*() {
      const { fake, round } = yield* fresh
      const before = fake.inputs.length
      const results = yield* Effect.all([round.run(), round.run(), round.run()], { concurrency: 3 })
      expect(results.reduce((n, r) => n + r.claimed, 0)).toBe(posts)
      const sent = fake.inputs.slice(before)
      expect(sent).toHaveLength(posts)
      expect(new Set(sent).size).toBe(posts)
    })))

  it.effect("takes over the posts of a worker whose lease ran out, not before", () =>
    virtual(Effect.gen(function*() {
      const queue = yield* EmbeddingQueue
      const embeddings = yield* Embeddings
      const model = Option.getOrThrow(embeddings.model)
      const { round, t0 } = yield* fresh
      // A worker that leased every post and died.
      const leased = yield* queue.claim({ model, nowMs: t0, limit: 100, leaseMs: 60_000, token: "dead-worker" })
      assert.strictEqual(leased.length, posts)
      assert.strictEqual((yield* round.run()).claimed, 0)
      yield* TestClock.adjust(60_000)
      assert.strictEqual((yield* round.run()).claimed, batchSize)
    })))
})
