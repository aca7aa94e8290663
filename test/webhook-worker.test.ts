import { assert, describe, expect, it, layer } from "@effect/vitest"
import { Clock, ConfigProvider, Context, Effect, Layer, Logger, Random, References } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { mkdtemp, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Core } from "../packages/server/src/App.js"
import * as ServerConfig from "../packages/server/src/config/ServerConfig.js"
import { Feedback } from "../packages/server/src/feedback/Feedback.js"
import { redactUrl } from "../packages/server/src/config/redaction.js"
import { backoffMs, judge, parseRetryAfter } from "../packages/server/src/webhooks/RetryPolicy.js"
import { OutboxRepo } from "../packages/server/src/webhooks/OutboxRepo.js"
import { WebhookOperatorRepo } from "../packages/server/src/webhooks/WebhookOperatorRepo.js"
import { concurrency, leaseMs, pausePolicy, perEndpoint } from "../packages/server/src/webhooks/limits.js"
import { WebhookDelivery } from "../packages/server/src/webhooks/WebhookDelivery.js"
import { startClock } from "./support/clock.js"
import { createDatabase } from "./support/database.js"
import { endpoint, Receiver, webhookOrganization } from "./support/receiver.js"

const policy = { maxAttempts: 8, baseMs: 5_000 }
const answered = (status: number, retryAfter?: string) => ({ _tag: "Answered", status, retryAfter, excerpt: "" }) as const

describe("retry policy", () => {
  it("succeeds on 2xx, retries network errors, timeouts, 408, 429 and 5xx, fails anything else at once", () => {
    for (const status of [200, 201, 204, 299]) expect(judge(policy, 1, answered(status), 0.5, 0)._tag).toBe("Succeeded")
    for (const status of [408, 429, 500, 502, 503, 599]) expect(judge(policy, 1, answered(status), 0.5, 0)._tag).toBe("Retry")
    expect(judge(policy, 1, { _tag: "NetworkError", message: "ECONNRESET" }, 0.5, 0)._tag).toBe("Retry")
    expect(judge(policy, 1, { _tag: "TimedOut", afterMs: 10_000 }, 0.5, 0)._tag).toBe("Retry")
    for (const status of [301, 302, 307, 308, 400, 401, 403, 404, 410, 422]) {
      expect(judge(policy, 1, answered(status), 0.5, 0)._tag).toBe("Failed")
    }
    expect(judge(policy, 1, answered(302), 0.5, 0)).toEqual({ _tag: "Failed", reason: "HTTP 302: redirects are not followed" })
    expect(judge(policy, 1, { _tag: "Refused", reason: "x resolves to 127.0.0.1, a loopback address" }, 0.5, 0))
      .toEqual({ _tag: "Failed", reason: "refused: x resolves to 127.0.0.1, a loopback address" })
  })

  it("stops retrying at WEBHOOK_MAX_ATTEMPTS", () => {
    expect(judge(policy, 7, answered(500), 0.5, 0)._tag).toBe("Retry")
    expect(judge(policy, 8, answered(500), 0.5, 0)).toEqual({ _tag: "Failed", reason: "HTTP 500 (after 8 attempts)" })
  })

  it("backs off exponentially from WEBHOOK_RETRY_BASE_MS with full jitter", () => {
    const ceilings = [1, 2, 3, 4, 5].map((attempt) => backoffMs(policy, attempt, 0.999999, undefined) + 1)
    expect(ceilings).toEqual([5_000, 10_000, 20_000, 40_000, 80_000])
    expect(backoffMs(policy, 3, 0, undefined)).toBe(0)
    expect(backoffMs(policy, 3, 0.5, undefined)).toBe(10_000)
    expect(backoffMs(policy, 60, 0.5, undefined)).toBe(12 * 60 * 60_000)
  })

  it("honours Retry-After as a floor, in seconds or as an HTTP date, capped at an hour", () => {
    const now = Date.parse("2026-11-26T12:00:00.000Z")
    expect(parseRetryAfter("120", now)).toBe(120_000)
    expect(parseRetryAfter("Thu, 26 Nov 2026 12:01:30 GMT", now)).toBe(90_000)
    expect(parseRetryAfter("Thu, 26 Nov 2026 11:00:00 GMT", now)).toBe(0)
    for (const junk of ["soon", "-5", "1.5", "", "12 parsecs"]) expect(parseRetryAfter(junk, now)).toBeUndefined()
    expect(judge(policy, 1, answered(429, "120"), 0.5, now)).toMatchObject({ _tag: "Retry", delayMs: 120_000 })
    expect(judge(policy, 1, answered(503, "1"), 0.5, now)).toMatchObject({ _tag: "Retry", delayMs: 2_500 })
    expect(judge(policy, 1, answered(429, "86400"), 0.5, now)).toMatchObject({ _tag: "Retry", delayMs: 60 * 60_000 })
  })
})

describe("URLs shown to the operator", () => {
  it("lose their credentials and query string", () => {
    expect(redactUrl("https://user:pa55@hooks.example.com:8443/in/abc?token=s3cret#x")).toBe("https://…@hooks.example.com:8443/in/abc?…")
    expect(redactUrl("https://hooks.example.com/in")).toBe("https://hooks.example.com/in")
    expect(redactUrl("not a url")).toBe("(invalid URL)")
  })
})

/** The receiver every test below posts to, one path per endpoint. */
class TestReceiver extends Context.Service<TestReceiver, Receiver>()("test/TestReceiver") {}

const maxAttempts = 3
const baseMs = 1_000
const timeoutMs = 2_000

const organizations = ["backoff", "retry_after", "lease", "lost", "pause", "hanging", "next"].map((name) => `org_${name}`)

/** Core (migrated, seeded) on a fresh database, the delivery service, and a receiver. */
const Env = Layer.unwrap(Effect.gen(function*() {
  const db = yield* Effect.acquireRelease(Effect.promise(createDatabase), (db) => Effect.promise(db.drop))
  const receiver = yield* Effect.acquireRelease(Effect.promise(Receiver.start), (r) => Effect.promise(() => r.close()))
  const fixture = {
    organizations: organizations.map((id) => webhookOrganization(id, [endpoint(`wh_${id}`, receiver.url(`/${id}`))]))
  }
  const dir = yield* Effect.promise(() => mkdtemp(join(tmpdir(), "hearken-worker-")))
  yield* Effect.promise(() => writeFile(join(dir, "fixture.json"), JSON.stringify(fixture)))
  const env = {
    DATABASE_URL: db.url,
    SEED_FILE: join(dir, "fixture.json"),
    LOG_LEVEL: "error",
    WEBHOOK_ALLOW_PRIVATE_URLS: "true",
    WEBHOOK_MAX_ATTEMPTS: String(maxAttempts),
    WEBHOOK_RETRY_BASE_MS: String(baseMs),
    WEBHOOK_TIMEOUT_MS: String(timeoutMs)
  }
  return Layer.mergeAll(WebhookDelivery.layer, Layer.succeed(TestReceiver, receiver)).pipe(
    Layer.provideMerge(Core),
    Layer.provideMerge(ServerConfig.layer),
    Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env })))
  )
}))

const createPost = (organizationId: string) =>
  Effect.gen(function*() {
    const feedback = yield* Feedback
    return yield* feedback.create({ organizationId, boardId: `b_${organizationId}`, title: "Tick", content: "tock" })
  })

interface Row {
  readonly status: string
  readonly attempts: number
  readonly nextAttemptMs: number
  readonly lastError: string | null
}

const deliveriesOf = (organizationId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<Row>`SELECT status, attempts, last_error AS "lastError",
        (extract(epoch FROM next_attempt_at) * 1000)::float8 AS "nextAttemptMs"
      FROM webhook_deliveries WHERE endpoint_id = ${`wh_${organizationId}`} ORDER BY created_at, id`
  }).pipe(Effect.orDie)

const failuresOf = (endpointId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ n: number }>`SELECT consecutive_failures AS n FROM webhook_endpoints WHERE id = ${endpointId}`
    return row!.n
  }).pipe(Effect.orDie)

const deliverDue = Effect.flatMap(WebhookDelivery, (delivery) => delivery.deliverDue)

/**
 * The layer (database pool, receiver) runs on real time; each test's own
 * fiber, and so the worker code it calls, runs on a fresh `TestClock`.
 */
const virtual = <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.provide(self, TestClock.layer())

layer(Env, { timeout: 60_000, excludeTestServices: true })("the worker, on virtual time", (it) => {
  it.effect("retries on the backoff schedule, signs each attempt at the Clock's time, then fails", () =>
    virtual(Effect.gen(function*() {
      const receiver = yield* TestReceiver
      receiver.on("/org_backoff", () => ({ status: 500 }))
      const t0 = yield* startClock
      yield* createPost("org_backoff")
      assert.strictEqual(yield* deliverDue, 1)

      for (const attempt of [1, 2]) {
        const [row] = yield* deliveriesOf("org_backoff")
        assert.deepStrictEqual([row!.status, row!.attempts], ["pending", attempt])
        const now = yield* Clock.currentTimeMillis
        const delay = row!.nextAttemptMs - now
        // Full jitter: anywhere in [0, base × 2^(attempt−1)).
        expect(delay).toBeGreaterThanOrEqual(0)
        expect(delay).toBeLessThan(baseMs * 2 ** (attempt - 1))
        if (delay > 0) {
          yield* TestClock.adjust(delay - 1)
          assert.strictEqual(yield* deliverDue, 0, "nothing is due one millisecond early")
          yield* TestClock.adjust(1)
        }
        assert.strictEqual(yield* deliverDue, 1)
      }
      const [row] = yield* deliveriesOf("org_backoff")
      assert.deepStrictEqual([row!.status, row!.attempts, row!.lastError], ["failed", 3, "HTTP 500 (after 3 attempts)"])
      const received = receiver.at("/org_backoff")
      assert.strictEqual(received.length, 3)
      assert.strictEqual(new Set(received.map((r) => r.headers["webhook-id"])).size, 1)
      // The first attempt was signed at t0 exactly: time comes from the Clock.
      assert.strictEqual(received[0]!.headers["webhook-timestamp"], String(t0 / 1000))
      yield* TestClock.adjust(60 * 60_000)
      assert.strictEqual(yield* deliverDue, 0)
    })))

  it.effect("honours Retry-After", () =>
    virtual(Effect.gen(function*() {
      const receiver = yield* TestReceiver
      receiver.on("/org_retry_after", (n) => n === 1 ? { status: 429, headers: { "retry-after": "120" } } : { status: 200 })
      yield* startClock
      yield* createPost("org_retry_after")
      assert.strictEqual(yield* deliverDue, 1)
      assert.strictEqual(yield* failuresOf("wh_org_retry_after"), 1)
      const now = yield* Clock.currentTimeMillis
      const [row] = yield* deliveriesOf("org_retry_after")
      assert.strictEqual(row!.nextAttemptMs - now, 120_000)
      yield* TestClock.adjust(119_999)
      assert.strictEqual(yield* deliverDue, 0)
      yield* TestClock.adjust(1)
      assert.strictEqual(yield* deliverDue, 1)
      const [done] = yield* deliveriesOf("org_retry_after")
      assert.deepStrictEqual([done!.status, done!.attempts], ["succeeded", 2])
      assert.strictEqual(yield* failuresOf("wh_org_retry_after"), 0, "a success ends the failure streak")
    })))

  it.effect("lets another worker take over a delivery whose lease ran out", () =>
    virtual(Effect.gen(function*() {
      const receiver = yield* TestReceiver
      const delivery = yield* WebhookDelivery
      yield* startClock
      yield* createPost("org_lease")
      // A worker claims it, then dies before sending.
      const claimed = yield* delivery.claim(100)
      assert.strictEqual(claimed.length, 1)
      assert.strictEqual(yield* deliverDue, 0, "a leased delivery is not claimed again")
      yield* TestClock.adjust(leaseMs(timeoutMs) - 1)
      assert.strictEqual(yield* deliverDue, 0)
      yield* TestClock.adjust(1)
      assert.strictEqual(yield* deliverDue, 1)
      assert.strictEqual(receiver.at("/org_lease").length, 1)
      const [row] = yield* deliveriesOf("org_lease")
      // The attempt the dead worker held counts.
      assert.deepStrictEqual([row!.status, row!.attempts], ["succeeded", 2])
    })))

  it.effect("fails, without sending, a delivery whose workers died in every attempt", () =>
    virtual(Effect.gen(function*() {
      const receiver = yield* TestReceiver
      const delivery = yield* WebhookDelivery
      yield* startClock
      yield* createPost("org_lost")
      for (let i = 0; i < maxAttempts; i++) {
        assert.strictEqual((yield* delivery.claim(100)).length, 1)
        yield* TestClock.adjust(leaseMs(timeoutMs))
      }
      assert.strictEqual(yield* deliverDue, 1)
      const [row] = yield* deliveriesOf("org_lost")
      assert.deepStrictEqual([row!.status, row!.attempts, row!.lastError], [
        "failed",
        maxAttempts + 1,
        "refused: no attempts left: the worker of the last one stopped before recording it"
      ])
      assert.strictEqual(receiver.at("/org_lost").length, 0)
    })))

  it.effect("pauses an endpoint after 50 consecutive failures over an hour, with a warn line; resume releases its deliveries", () =>
    // Seeded, so that no backoff draws 0 ms and no retry falls due inside the burst.
    virtual(Effect.gen(function*() {
      const receiver = yield* TestReceiver
      const operator = yield* WebhookOperatorRepo
      let failing = true
      receiver.on("/org_pause", () => ({ status: failing ? 503 : 200 }))
      const lines: Array<string> = []
      const capture = Logger.layer([Logger.make(({ logLevel, message }) => {
        if (logLevel === "Warn") lines.push([message].flat().join(" "))
      })])
      yield* startClock
      for (let i = 0; i < 50; i++) yield* createPost("org_pause")
      // 50 failed attempts within a minute: a burst, not a dead endpoint.
      while ((yield* deliverDue) > 0) {}
      const afterBurst = yield* deliveriesOf("org_pause")
      assert.strictEqual(afterBurst.filter((r) => r.status === "pending" && r.attempts === 1).length, 50)
      assert.strictEqual(receiver.at("/org_pause").length, 50)

      // An hour on, the streak goes on failing: the first failure pauses it.
      yield* TestClock.adjust(60 * 60_000)
      assert.strictEqual(
        yield* deliverDue.pipe(Effect.provide(capture), Effect.provideService(References.MinimumLogLevel, "Warn")),
        perEndpoint
      )
      while ((yield* deliverDue) > 0) {}
      assert.strictEqual(receiver.at("/org_pause").length, 50 + perEndpoint, "only the batch in flight went out")
      const sql = yield* SqlClient.SqlClient
      const [endpointRow] = yield* sql<{ paused: boolean; failures: number }>`SELECT paused_at IS NOT NULL AS paused,
          consecutive_failures AS failures FROM webhook_endpoints WHERE id = 'wh_org_pause'`
      assert.deepStrictEqual(endpointRow, { paused: true, failures: 50 + perEndpoint })
      expect(lines.filter((l) => l.includes("paused"))).toEqual([
        `Webhook endpoint paused after ${pausePolicy.failures + 1} consecutive failed attempts; resume it with: npm run webhooks -- resume wh_org_pause`
      ])
      // Every delivery not in flight when the pause came is held; those in flight come back pending,
      // and stay undelivered while the endpoint is paused.
      const statuses = (yield* deliveriesOf("org_pause")).map((r) => r.status)
      const held = statuses.filter((s) => s === "held").length
      expect(held).toBeGreaterThanOrEqual(50 - perEndpoint)
      assert.strictEqual(statuses.filter((s) => s === "pending").length, 50 - held)

      // A new post of a paused endpoint waits too.
      yield* createPost("org_pause")
      yield* TestClock.adjust(60 * 60_000)
      assert.strictEqual(yield* deliverDue, 0)

      failing = false
      const resumed = yield* operator.resume("wh_org_pause")
      assert.deepStrictEqual(resumed, { wasPaused: true, released: held + 1 })
      while ((yield* deliverDue) > 0) {}
      const rows = yield* deliveriesOf("org_pause")
      assert.strictEqual(rows.length, 51)
      assert.deepStrictEqual(rows.filter((r) => r.status !== "succeeded"), [])
      const ids = new Set(receiver.at("/org_pause").map((r) => r.headers["webhook-id"]))
      assert.strictEqual(ids.size, 51)
    }).pipe(Random.withSeed("pause"))))

  it.effect("claims fairly: a backlog of 500 takes only its endpoint's share, and another's retry is claimed at once", () =>
    virtual(Effect.gen(function*() {
      const receiver = yield* TestReceiver
      const outbox = yield* OutboxRepo
      const delivery = yield* WebhookDelivery
      receiver.on("/org_next", (n) => ({ status: n === 1 ? 503 : 204 }))
      yield* startClock
      // B's delivery fails once; its retry falls due within a second, behind every new delivery ('-infinity').
      yield* createPost("org_next")
      assert.strictEqual(yield* deliverDue, 1)
      // Meanwhile A's endpoint gathers a backlog of 500 new deliveries.
      yield* Effect.forEach(Array.from({ length: 500 }, (_, i) => i), (i) =>
        outbox.enqueue({ id: `msg_hanging_${i}`, organizationId: "org_hanging", type: "feedback.post.created", body: "{}", traceparent: null }), {
        concurrency: 4,
        discard: true
      })
      yield* TestClock.adjust(baseMs)

      const byEndpoint = (batch: ReadonlyArray<{ readonly endpointId: string }>) =>
        batch.reduce<Record<string, number>>((n, d) => ({ ...n, [d.endpointId]: (n[d.endpointId] ?? 0) + 1 }), {})
      // Nothing in flight: A gets its share, and B's retry goes with it.
      const first = yield* delivery.claim(concurrency)
      assert.deepStrictEqual(byEndpoint(first), { wh_org_hanging: perEndpoint, wh_org_next: 1 })
      // A at its cap (its attempts hang): this worker takes none of A's more, however many slots it has.
      yield* createPost("org_next")
      const again = yield* delivery.claim(concurrency, {
        endpoints: new Map([["wh_org_hanging", perEndpoint], ["wh_org_next", 1]]),
        organizations: new Map([["org_hanging", perEndpoint], ["org_next", 1]]),
        stalled: 0,
        late: new Set()
      })
      assert.deepStrictEqual(byEndpoint(again), { wh_org_next: 1 })
      // A second worker (nothing in flight of its own) takes A's next share, none of what the first leased.
      const second = yield* delivery.claim(concurrency)
      assert.deepStrictEqual(byEndpoint(second), { wh_org_hanging: perEndpoint })
      const leased = new Set([...first, ...again].map((d) => d.id))
      assert.isFalse(second.some((d) => leased.has(d.id)))
    })))
})
