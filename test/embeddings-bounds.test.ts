import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createDatabase, type TestDatabase } from "./support/database.js"
import { bombBytes, type FakeEmbeddings, type HostileMode, hugeBytes, startFakeEmbeddings } from "./support/embeddings.js"
import { baseFixture, fixturePost } from "./support/fixtures.js"
import { freePort, spawnServer, type ServerProcess, waitForHealth } from "./support/process.js"
import { postJson, writeFixtureFile } from "./support/server.js"
import { eventually } from "./support/wait.js"
import { productionNodeOptions } from "./support/flood.js"
import { watchServer } from "./support/watch.js"

/**
 * Decision 0028: an embeddings answer is read as a stream, up to a size that
 * follows from the batch and the vector size, after decompression. The
 * server runs as production runs it (a 256 MB old space), and a fake API on
 * loopback answers each call with one of three answers meant to exhaust it,
 * sent as fast as the server reads them: a vector that never ends, 400 MiB,
 * and 1 MB of gzip that inflates to 1 GiB. Each goes to a draft (POST
 * /suggestions) and to the background embedding of a new post. Meanwhile the
 * server's RSS and `/health` are watched; past 1.5 GB the server is killed, so
 * that a server that does not hold costs this machine no more.
 */
const maxRssMb = 400
const maxHealthMs = 1_000
const killAtMb = 1_500
const dimensions = 64
const draftTimeoutMs = 1_500
const backfillTimeoutMs = 15_000

const fixture = baseFixture()
fixture.organizations[0]!.posts = [
  fixturePost("p_dark", "Dark mode", "<p>Please add a dark theme</p>"),
  fixturePost("p_export", "Export to CSV", "<p>All posts as a spreadsheet</p>")
]

let db: TestDatabase
let fake: FakeEmbeddings
let server: ServerProcess
let metricsPort: number
let seedFile: string

const alive = () => server.child.exitCode === null && server.child.signalCode === null

/** Embeddings calls of this outcome so far (`hearken_embeddings_calls_total`). */
const calls = async (outcome: string) => {
  const text = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((r) => r.text())
  const line = text.split("\n").find((l) => l.startsWith("hearken_embeddings_calls_total{") && l.includes(`outcome="${outcome}"`))
  return line === undefined ? 0 : Number(line.split(" ").at(-1))
}

beforeAll(async () => {
  ;[db, fake] = await Promise.all([createDatabase(), startFakeEmbeddings({ dimensions })])
  seedFile = await writeFixtureFile(fixture)
})

afterAll(async () => {
  if (server !== undefined && alive()) server.child.kill("SIGKILL")
  await fake?.close()
  await db?.drop()
})

/**
 * A server of its own for each case: after a failed call the background
 * loop waits before its next one (`EMBEDDINGS_RETRY_BASE_MS`), and a failed
 * post waits 10 minutes, so each hostile answer below is asked for once.
 */
const startServer = async (env: Record<string, string> = {}) => {
  fake.mode = "ok"
  metricsPort = await freePort()
  server = spawnServer({
    DATABASE_URL: db.url,
    SEED_FILE: seedFile,
    LOG_LEVEL: "error",
    RATE_LIMIT_MULTIPLIER: "1000",
    METRICS_PORT: String(metricsPort),
    NODE_OPTIONS: productionNodeOptions,
    EMBEDDINGS_URL: fake.url,
    EMBEDDINGS_MODEL: "concepts-1",
    EMBEDDINGS_DIMENSIONS: String(dimensions),
    EMBEDDINGS_TIMEOUT_MS: String(draftTimeoutMs),
    EMBEDDINGS_BACKFILL_TIMEOUT_MS: String(backfillTimeoutMs),
    EMBEDDINGS_RETRY_BASE_MS: "600000",
    ...env
  }, await freePort())
  await waitForHealth(server.origin)
  // The imported posts embedded while the API behaves.
  await eventually("the imported posts embedded", async () => {
    const [row] = await db.query<{ n: number }>((sql) =>
      sql`SELECT count(*)::int AS n FROM post_embeddings WHERE post_id IN ('p_dark', 'p_export') AND embedding IS NOT NULL`
    )
    return row!.n === 2 || undefined
  })
}

const stopServer = async () => {
  if (!alive()) return
  server.child.kill("SIGTERM")
  await server.exited
}

/** The limit of an answer for one input (`maxAnswerBytes`): a draft's, and a lone new post's. */
const maxBytes = 64 * 1024 + 1024 + dimensions * 64
const tooLarge = { error: `the answer is longer than ${maxBytes} bytes`, outcome: "too_large" }

const cases: ReadonlyArray<{ readonly mode: HostileMode; readonly what: string; readonly error: string; readonly outcome: string; readonly env?: Record<string, string> }> = [
  { mode: "endless", what: "a vector whose numbers never end", ...tooLarge },
  { mode: "huge", what: `${hugeBytes / 2 ** 20} MiB`, ...tooLarge },
  { mode: "gzip-bomb", what: `1 MB of gzip that inflates to ${bombBytes / 2 ** 30} GiB`, ...tooLarge },
  // Never reaching the limit: the timeout ends it, and hangs up as well.
  { mode: "trickle", what: "a number every 100 ms", error: "no answer within 3000 ms", outcome: "timeout", env: { EMBEDDINGS_BACKFILL_TIMEOUT_MS: "3000" } }
]

describe("embeddings answers meant to exhaust memory, on a 256 MB heap", () => {
  for (const { mode, what, error, outcome, env } of cases) {
    it(`${what}: a draft gets the lexical answer in time, a new post a recorded failure; RSS ≤ ${maxRssMb} MB, /health ≤ ${maxHealthMs} ms`, async () => {
      await startServer(env)
      const callsBefore = await calls(outcome)
      const sentBefore = fake.hostileBytesSent
      fake.mode = mode
      const watching = watchServer(server, killAtMb)
      try {
        const started = performance.now()
        const draft = await postJson(`${server.origin}/api/widget/v1/suggestions`, {
          organizationId: "org_acme", boardId: "b_feat", title: `Dark mode please (${mode})`, content: "a dark theme"
        })
        const draftMs = performance.now() - started
        expect(draft.status).toBe(200)
        expect(draft.body.map((p: { id: string }) => p.id)).toEqual(["p_dark"])
        expect(draftMs).toBeLessThan(draftTimeoutMs + 1_000)

        const created = await postJson(`${server.origin}/api/widget/v1/feedback`, {
          organizationId: "org_acme", boardId: "b_feat", title: `Calendar view (${mode})`, content: "a wall planner"
        })
        expect(created.status).toBe(200)
        const postId = created.body.id as string
        const failed = await eventually(`the post's failure recorded (${mode})`, async () => {
          if (!alive()) return { error: "the server died", attempts: 0, embedded: false }
          const [row] = await db.query<{ error: string | null; attempts: number; embedded: boolean; leased: boolean }>((sql) =>
            sql`SELECT last_error AS error, attempts, embedding IS NOT NULL AS embedded, lease_token IS NOT NULL AS leased
              FROM post_embeddings WHERE post_id = ${postId}`
          )
          return row !== undefined && row.attempts > 0 && !row.leased ? row : undefined
        }, { timeoutMs: 30_000, everyMs: 100 })
        const seen = await watching.stop()
        const sentMb = Math.round((fake.hostileBytesSent - sentBefore) / 2 ** 20)
        console.log(`${mode}: peak RSS ${seen.peakRssMb} MB, slowest /health ${seen.slowestHealthMs} ms, draft ${Math.round(draftMs)} ms, ${sentMb} MB sent`)

        expect(seen.killed, `RSS went past ${killAtMb} MB`).toBe(false)
        expect(alive(), server.output().slice(-2_000)).toBe(true)
        expect(failed).toEqual({ error, attempts: 1, embedded: false, leased: false })
        // The draft's call and the post's, both stopped so.
        expect(await calls(outcome)).toBe(callsBefore + 2)
        expect(seen.peakRssMb).toBeLessThanOrEqual(maxRssMb)
        expect(seen.slowestHealthMs).toBeLessThanOrEqual(maxHealthMs)
        // Both answers given up on: their connections closed, nothing more is sent.
        await eventually("the hostile answers' connections closed", async () => fake.hostileAnswersOpen === 0 || undefined, { timeoutMs: 2_000 })
        expect(fake.hostileBytesSent - sentBefore).toBeLessThan(64 * 2 ** 20)
      } finally {
        await watching.stop()
        await stopServer()
        fake.mode = "ok"
      }
    }, 60_000)
  }
})
