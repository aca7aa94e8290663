import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { attempt, attemptFresh, holdLock, type Outcome, pool, steadyLoad, tally, terminator } from "./support/faults.js"
import { endpoint, webhookOrganization } from "./support/receiver.js"
import { OwnRedis } from "./support/redis.js"
import { startSeededServer, useServer, useServerProcesses } from "./support/server.js"
import { eventually } from "./support/wait.js"

/**
 * Faults injected into the real services under load: PostgreSQL connections
 * killed, Redis killed and frozen, the server process sent SIGTERM. Every
 * request has a hang guard (`timeoutMs`): a hang is a failure, as is a reset
 * connection.
 */

// Every post enqueues one webhook event; with WEBHOOK_WORKER=false nothing sends them, so they stay to be counted.
const fixture = { organizations: [webhookOrganization("org_faults", [endpoint("wh_faults", "http://127.0.0.1:9/hook")])] }
const feedback = (title: string) => ({ organizationId: "org_faults", boardId: "b_org_faults", title, content: "<p>Fault</p>" })
const draft = { organizationId: "org_faults", boardId: "b_org_faults", title: "fault tolerance", content: "" }

const internalError = { _tag: "InternalServerError", message: "Internal server error" }
const shuttingDown = { _tag: "InternalServerError", message: "shutting down; retry shortly" }

describe("PostgreSQL connections terminated while 200 posts are submitted", () => {
  const server = useServer(() => startSeededServer(fixture, { WEBHOOK_WORKER: "false", LOG_LEVEL: "none" }))

  const stored = async () => {
    const posts = await server.db.query<{ id: string; title: string }>((sql) =>
      sql`SELECT id, title FROM posts WHERE organization_id = 'org_faults'`)
    const events = await server.db.query<{ post: string; n: number }>((sql) =>
      sql`SELECT body::jsonb -> 'data' ->> 'id' AS post, count(*)::int AS n FROM webhook_events
          WHERE organization_id = 'org_faults' GROUP BY 1`)
    return {
      titles: new Map(posts.map((p) => [p.id, p.title])),
      events: new Map(events.map((e) => [e.post, e.n]))
    }
  }

  it("stores every acknowledged post with exactly one event, and fails the others with a clean 500", async () => {
    const chaos = terminator(server.db.name, 250)
    const outcomes = await pool(200, 10, (i) =>
      attempt(`${server.api}/feedback`, { body: feedback(`Fault ${i}`), timeoutMs: 15_000 }))
    const kills = await chaos.stop()
    console.info(`postgres chaos: ${kills} backends terminated; answers ${JSON.stringify(tally(outcomes))}`)

    // The faults happened: connections were killed throughout the run.
    expect(kills).toBeGreaterThanOrEqual(20)
    // No hang, no reset connection: every request got an answer, and only these two.
    expect(outcomes.filter((o) => o.error !== undefined)).toEqual([])
    for (const o of outcomes) expect([200, 500]).toContain(o.status)
    for (const o of outcomes.filter((o) => o.status === 500)) {
      expect(o.body).toEqual(internalError)
      expect(o.contentType).toMatch(/^application\/json/)
    }

    const acknowledged = outcomes.flatMap((o, i) => o.status === 200 ? [{ id: o.body.id as string, title: `Fault ${i}` }] : [])
    expect(new Set(acknowledged.map((a) => a.id)).size).toBe(acknowledged.length)
    const { titles, events } = await stored()
    for (const post of acknowledged) {
      expect(titles.get(post.id), `post ${post.id} (${post.title})`).toBe(post.title)
      expect(events.get(post.id) ?? 0, `events of ${post.id}`).toBe(1)
    }
    // The outbox commits with its post: no post without its event, no event without its post (even for a 500).
    expect([...events.keys()].sort()).toEqual([...titles.keys()].sort())
    expect([...events.values()].every((n) => n === 1)).toBe(true)
    console.info(`postgres chaos: ${acknowledged.length} acknowledged posts checked, ${titles.size} stored`)
  }, 60_000)

  it("reconnects by itself: once the terminations stop, new posts succeed", async () => {
    const outcomes = await pool(20, 10, (i) => attempt(`${server.api}/feedback`, { body: feedback(`After ${i}`), timeoutMs: 15_000 }))
    expect(outcomes.map((o) => o.error ?? o.status)).toEqual(Array(20).fill(200))
    const { titles, events } = await stored()
    for (const o of outcomes) {
      expect(titles.has(o.body.id)).toBe(true)
      expect(events.get(o.body.id)).toBe(1)
    }
    const health = await attempt(`${server.origin}/health`, { timeoutMs: 5_000 })
    expect(health.status).toBe(200)
  })
})

describe("Redis killed or frozen under concurrent load", () => {
  let redis: OwnRedis
  beforeAll(async () => {
    redis = await OwnRedis.start()
  })
  afterAll(() => redis?.kill())
  const server = useServer(() => startSeededServer(fixture, { WEBHOOK_WORKER: "false", REDIS_URL: redis.url }))

  /** 16 clients in a loop on two rate-limited endpoints; the limiter answers within 500 ms, so 5 s means a hang. */
  const load = () =>
    steadyLoad(16, (i) =>
      i % 2 === 0
        ? attempt(`${server.api}/boards?organizationId=org_faults`, { timeoutMs: 5_000 })
        : attempt(`${server.api}/suggestions`, { body: draft, timeoutMs: 5_000 }))

  const startedAfter = (outcomes: ReadonlyArray<Outcome>, at: number) => outcomes.filter((o) => o.startedAt > at)
  const atLeast = (what: string, outcomes: () => ReadonlyArray<Outcome>, n: number) =>
    eventually(what, async () => outcomes().length >= n || undefined, { timeoutMs: 15_000, everyMs: 20, describe: () => `${outcomes().length} so far` })

  /**
   * Runs the load through an outage (`fail`, then `repair`) and checks each
   * phase: all 200 before, all 503 `RateLimitUnavailableError` while down
   * (at least 60 of them), and all 200 again from the first success after
   * the repair. Requests that straddle a transition may get either answer.
   */
  const throughOutage = async (fail: () => Promise<void>, repair: () => Promise<void>) => {
    const running = load()
    const all = () => running.outcomes
    try {
      await atLeast("answers before the fault", all, 40)
      const failing = performance.now()
      await fail()
      const failed = performance.now()
      await atLeast("answers during the fault", () => startedAfter(all(), failed), 60)
      const repairing = performance.now()
      await repair()
      const recovered = await eventually("a 200 after the repair", async () =>
        startedAfter(all(), repairing).find((o) => o.status === 200)?.endedAt, { timeoutMs: 15_000, everyMs: 20 })
      await atLeast("answers after recovery", () => startedAfter(all(), recovered), 60)
      const outcomes = await running.stop()

      expect(outcomes.filter((o) => o.error !== undefined)).toEqual([])
      for (const o of outcomes) expect([200, 503]).toContain(o.status)
      for (const o of outcomes.filter((o) => o.status === 503)) {
        expect(o.body).toEqual({ _tag: "RateLimitUnavailableError", message: expect.any(String) })
        expect(o.contentType).toMatch(/^application\/json/)
        expect(o.retryAfter).toBe("1")
      }
      const before = outcomes.filter((o) => o.endedAt < failing)
      const during = outcomes.filter((o) => o.startedAt > failed && o.endedAt < repairing)
      const after = startedAfter(outcomes, recovered)
      expect(before.length).toBeGreaterThanOrEqual(40)
      expect(before.map((o) => o.status)).toEqual(Array(before.length).fill(200))
      expect(during.length).toBeGreaterThanOrEqual(60)
      expect(during.map((o) => o.status)).toEqual(Array(during.length).fill(503))
      expect(after.map((o) => o.status)).toEqual(Array(after.length).fill(200))
      const ms = during.map((o) => o.endedAt - o.startedAt).sort((a, b) => a - b)
      console.info(
        `redis outage: ${JSON.stringify(tally(outcomes))}; 503 in p50 ${Math.round(ms[ms.length >> 1]!)} ms, ` +
          `max ${Math.round(ms.at(-1)!)} ms; recovered ${Math.round(recovered - repairing)} ms after the repair`
      )
    } finally {
      await running.stop()
    }
  }

  it("answers 503 to every request while Redis is killed, and 200 again once it restarts", async () => {
    await throughOutage(() => redis.kill(), () => redis.restart())
  }, 60_000)

  it("answers 503 to every request while Redis is frozen (SIGSTOP), and 200 again once it thaws", async () => {
    await throughOutage(async () => redis.freeze(), async () => redis.thaw())
  }, 60_000)
})

describe("SIGTERM under load", () => {
  const servers = useServerProcesses(fixture, {
    WEBHOOK_WORKER: "false",
    // The posts below wait on a lock for a while; the statement limit must not be what ends them.
    DATABASE_STATEMENT_TIMEOUT_MS: "30000"
  })

  it("finishes the requests in flight with their normal answers, refuses new connections, and exits 0", async () => {
    const server = await servers.processes.start()
    const db = servers.db
    const api = `${server.origin}/api/widget/v1`
    // A stream of requests, each on a new connection, through the whole shutdown.
    const stream = steadyLoad(4, (i) =>
      i % 2 === 0
        ? attemptFresh(`${api}/boards?organizationId=org_faults`, { timeoutMs: 15_000 })
        : attemptFresh(`${api}/suggestions`, { body: draft, timeoutMs: 15_000 }))

    // Slow requests: posts that wait on a lock on `posts`, and posts whose client sends half the body and pauses.
    const lock = holdLock(db.url, "LOCK TABLE posts IN SHARE ROW EXCLUSIVE MODE")
    await lock.held
    const waiting = Array.from({ length: 6 }, (_, i) =>
      attemptFresh(`${api}/feedback`, { body: feedback(`Waiting ${i}`), timeoutMs: 20_000 }))
    let resume!: () => void
    const restOfBody = new Promise<void>((resolve) => (resume = resolve))
    const sentHalf: Array<Promise<void>> = []
    const halfSent = Array.from({ length: 2 }, (_, i) => {
      let sent!: () => void
      sentHalf.push(new Promise<void>((resolve) => (sent = resolve)))
      return attemptFresh(`${api}/feedback`, { body: feedback(`Half sent ${i}`), timeoutMs: 20_000, restOfBody, sent })
    })
    const inFlight = [...waiting, ...halfSent]
    let settled = 0
    for (const request of inFlight) void request.then(() => settled++)
    await Promise.all(sentHalf)
    await eventually("6 posts waiting on the lock", async () => {
      const [row] = await db.query<{ n: number }>((sql) =>
        sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = ${db.name} AND wait_event_type = 'Lock'`)
      return row!.n === 6 || undefined
    }, { timeoutMs: 15_000, everyMs: 20 })

    const signalled = performance.now()
    server.child.kill("SIGTERM")
    // The listener closes at once; the 8 requests are still in flight.
    await eventually("new connections to be refused", async () =>
      (await attemptFresh(`${server.origin}/health`, { timeoutMs: 5_000 })).error === "ECONNREFUSED" || undefined,
      { timeoutMs: 5_000, everyMs: 20 })
    expect(settled).toBe(0)
    expect(server.child.exitCode).toBe(null)

    resume()
    await lock.release()
    const answers = await Promise.all(inFlight)
    const exitCode = await Promise.race([
      server.exited,
      new Promise<string>((resolve) => setTimeout(() => resolve("still running 15 s after SIGTERM"), 15_000))
    ])
    const exitedAfterMs = performance.now() - signalled
    const outcomes = await stream.stop()

    expect(answers.map((o) => o.error ?? o.status)).toEqual(Array(8).fill(200))
    expect(answers.map((o) => o.body.title)).toEqual([...Array.from({ length: 6 }, (_, i) => `Waiting ${i}`), "Half sent 0", "Half sent 1"])
    expect(exitCode).toBe(0)
    const posts = await db.query<{ id: string }>((sql) => sql`SELECT id FROM posts`)
    expect(posts.map((p) => p.id).sort()).toEqual(answers.map((o) => o.body.id).sort())

    // The stream: every request sent before the signal is answered 200, or refused with the JSON 503
    // if it reached the server once it had begun to drain (decision 0018); every one sent once the
    // listener is gone is refused, and nothing hangs. In between, a connection the kernel had queued
    // when the listener closed is reset: that race is in closing any listening socket (see the report),
    // so resets are tolerated only there, before the first refusal.
    const refused = outcomes.filter((o) => o.error === "ECONNREFUSED")
    expect(refused.length).toBeGreaterThan(0)
    const closedBy = Math.min(...refused.map((o) => o.startedAt))
    // A connection begun just before the signal may still sit in the kernel's accept queue when the
    // listener closes, as one begun after it: the same race (CI once met it 0–100 ms before the signal).
    const queued = signalled - 100
    const before = outcomes.filter((o) => o.startedAt < queued)
    const racing = outcomes.filter((o) => o.startedAt >= queued && o.startedAt < closedBy)
    const after = outcomes.filter((o) => o.startedAt >= closedBy)
    expect(before.length).toBeGreaterThan(0)
    for (const o of before) expect([200, 503]).toContain(o.error ?? o.status)
    for (const o of racing) expect(["ECONNRESET", "ECONNREFUSED", 200, 503]).toContain(o.error ?? o.status)
    for (const o of outcomes.filter((o) => o.status === 503)) expect([o.retryAfter, o.body]).toEqual(["1", shuttingDown])
    expect(after.map((o) => o.error ?? o.status)).toEqual(Array(after.length).fill("ECONNREFUSED"))
    const resets = racing.filter((o) => o.error === "ECONNRESET").length
    console.info(
      `SIGTERM: ${answers.length} requests in flight answered 200; stream ${JSON.stringify(tally(outcomes))} ` +
        `(${resets} reset in the ${Math.round(closedBy - signalled)} ms before the listener closed); ` +
        `exited ${exitCode} ${Math.round(exitedAfterMs)} ms after the signal`
    )
  }, 60_000)
})
