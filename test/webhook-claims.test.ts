import { assert, expect, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { randomUUID } from "node:crypto"
import { mkdtemp, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Core } from "../packages/server/src/App.js"
import * as ServerConfig from "../packages/server/src/config/ServerConfig.js"
import {
  pausePolicy,
  perEndpoint,
  perOrganization,
  perStalledEndpoint,
  stalledSlots
} from "../packages/server/src/webhooks/limits.js"
import { type ClaimedDelivery, DeliveryQueue, type Load, noLoad } from "../packages/server/src/webhooks/DeliveryQueue.js"
import { OutboxRepo } from "../packages/server/src/webhooks/OutboxRepo.js"
import { WebhookOperatorRepo } from "../packages/server/src/webhooks/WebhookOperatorRepo.js"
import { createDatabase } from "./support/database.js"
import { endpoint, webhookOrganization } from "./support/receiver.js"

/**
 * The claim's order and limits (decision 0026), at the repository: each test
 * passes its own `now` and the claiming worker's load, and drains what it
 * leaves, so that the next one starts from an empty queue.
 */

const url = "http://127.0.0.1:9/never"
const organizations = [
  webhookOrganization("org_a", ["wh_a1", "wh_a2", "wh_a3"].map((id) => endpoint(id, url))),
  webhookOrganization("org_b", [endpoint("wh_b1", url)]),
  webhookOrganization("org_c", [endpoint("wh_c1", url)]),
  webhookOrganization("org_wide", Array.from({ length: 20 }, (_, i) => endpoint(`wh_wide_${String(i).padStart(2, "0")}`, url))),
  ...Array.from({ length: 20 }, (_, i) => webhookOrganization(`org_s${String(i).padStart(2, "0")}`, [endpoint(`wh_s${String(i).padStart(2, "0")}`, url)]))
]

const Env = Layer.unwrap(Effect.gen(function*() {
  const db = yield* Effect.acquireRelease(Effect.promise(createDatabase), (db) => Effect.promise(db.drop))
  const dir = yield* Effect.promise(() => mkdtemp(join(tmpdir(), "hearken-claims-")))
  yield* Effect.promise(() => writeFile(join(dir, "fixture.json"), JSON.stringify({ organizations })))
  const env = { DATABASE_URL: db.url, SEED_FILE: join(dir, "fixture.json"), LOG_LEVEL: "error", WEBHOOK_WORKER: "false" }
  return Core.pipe(
    Layer.provideMerge(ServerConfig.layer),
    Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env })))
  )
}))

const limits = { perEndpoint, perStalledEndpoint, perOrganization, stalledSlots }
const leaseMs = 60_000
/**
 * Each test's own moment, a day after the last one's: a claim serves an
 * organization at its `now`, and one served later than a claim's `now` waits
 * for its turn.
 */
let today = Date.parse("2030-01-01T00:00:00.000Z")
const nextDay = () => (today += 24 * 60 * 60_000)

const claim = (nowMs: number, limit: number, load: Load = noLoad) =>
  Effect.flatMap(DeliveryQueue, (queue) => queue.claim({ nowMs, limit, limits, load, leaseMs, token: randomUUID() }))

/** `times` posts' worth of deliveries to every endpoint of `organizationId`. */
const enqueue = (organizationId: string, times = 1) =>
  Effect.flatMap(OutboxRepo, (outbox) =>
    Effect.forEach(Array.from({ length: times }), () =>
      outbox.enqueue({
        id: `msg_${randomUUID().replaceAll("-", "")}`,
        organizationId,
        type: "feedback.post.created",
        body: "{}",
        traceparent: null
      }), { discard: true }))

const tally = (batch: ReadonlyArray<ClaimedDelivery>, key: "endpointId" | "organizationId") =>
  batch.reduce<Record<string, number>>((n, d) => ({ ...n, [d[key]]: (n[d[key]] ?? 0) + 1 }), {})

/** What `batch` puts in flight, as a worker would report it. */
const loadOf = (batch: ReadonlyArray<ClaimedDelivery>, extra: Partial<Load> = {}): Load => ({
  endpoints: new Map(Object.entries(tally(batch, "endpointId"))),
  organizations: new Map(Object.entries(tally(batch, "organizationId"))),
  stalled: batch.filter((d) => d.stalled).length,
  late: new Set(),
  ...extra
})

/** Marks every pending delivery succeeded: the next test starts from an empty queue. */
const drain = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql`UPDATE webhook_deliveries SET status = 'succeeded', lease_until = NULL, lease_token = NULL
    WHERE status IN ('pending', 'held')`).pipe(Effect.asVoid)

interface QueueRow {
  readonly readyMs: number | null
  readonly servedMs: number | null
  readonly stalled: boolean
}
const queueRow = (table: "endpoint" | "organization", id: string, stalled = false) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    (table === "endpoint"
      ? sql<QueueRow>`SELECT (extract(epoch FROM ready_at) * 1000)::float8 AS "readyMs",
          (extract(epoch FROM served_at) * 1000)::float8 AS "servedMs", stalled
        FROM webhook_endpoint_queues WHERE endpoint_id = ${id}`
      : sql<QueueRow>`SELECT (extract(epoch FROM ready_at) * 1000)::float8 AS "readyMs",
          (extract(epoch FROM served_at) * 1000)::float8 AS "servedMs", stalled
        FROM webhook_organization_queues WHERE organization_id = ${id} AND stalled = ${stalled}`).pipe(
      Effect.map((rows) => rows[0]!)
    ))

const complete = (delivery: ClaimedDelivery, nowMs: number, outcome: "succeeded" | { readonly retryAtMs: number; readonly stalled: boolean }) =>
  Effect.flatMap(DeliveryQueue, (queue) =>
    queue.complete(
      delivery,
      outcome === "succeeded"
        ? { status: "succeeded", nowMs, httpStatus: 204, error: null, response: null, stalled: false }
        : { status: "pending", nowMs, nextAttemptMs: outcome.retryAtMs, httpStatus: null, error: "timed out", response: null, stalled: outcome.stalled },
      pausePolicy
    ))

layer(Env, { timeout: 60_000 })("claims, at the repository", (it) => {
  it.effect("take turns by organization, then by endpoint within each organization", () =>
    Effect.gen(function*() {
      yield* drain
      const t0 = nextDay()
      // A has three endpoints with five deliveries each; B one delivery; C two.
      yield* enqueue("org_a", 5)
      yield* enqueue("org_b")
      yield* enqueue("org_c", 2)
      // Three slots: one delivery of each organization, not three of A's.
      const first = yield* claim(t0, 3)
      assert.deepStrictEqual(tally(first, "organizationId"), { org_a: 1, org_b: 1, org_c: 1 })
      assert.deepStrictEqual(tally(first, "endpointId"), { wh_a1: 1, wh_b1: 1, wh_c1: 1 })
      // Another worker, three slots: B has nothing left; A and C take turns, and within A its
      // endpoints do: A's two that were not served yet, and C's second.
      const second = yield* claim(t0 + 1, 3)
      assert.deepStrictEqual(tally(second, "endpointId"), { wh_a2: 1, wh_a3: 1, wh_c1: 1 })
      // The rest of A, up to its 16, an even share of each endpoint: 4 + 4 + 4.
      const third = yield* claim(t0 + 2, 32)
      assert.deepStrictEqual(tally(third, "endpointId"), { wh_a1: 4, wh_a2: 4, wh_a3: 4 })
      assert.deepStrictEqual(yield* claim(t0 + 3, 32), [])
    }))

  it.effect("hold one organization to 16 attempts in flight per worker, whatever its endpoints", () =>
    Effect.gen(function*() {
      yield* drain
      const t0 = nextDay()
      yield* enqueue("org_wide", 2)
      yield* enqueue("org_b")
      const first = yield* claim(t0, 32)
      assert.deepStrictEqual(tally(first, "organizationId"), { org_wide: perOrganization, org_b: 1 })
      // One each of 16 of its 20 endpoints.
      assert.strictEqual(Object.keys(tally(first, "endpointId")).length, perOrganization + 1)
      // At its cap in this worker: nothing more of it, however many slots are free.
      yield* enqueue("org_b")
      const again = yield* claim(t0 + 1, 32, loadOf(first))
      assert.deepStrictEqual(tally(again, "organizationId"), { org_b: 1 })
      // A second worker, with nothing in flight, takes its next 16: the four endpoints not served
      // yet first, none of what the first worker leased.
      const second = yield* claim(t0 + 2, 32)
      assert.deepStrictEqual(tally(second, "organizationId"), { org_wide: perOrganization })
      const leased = new Set(first.map((d) => d.id))
      assert.isFalse(second.some((d) => leased.has(d.id)))
      const unserved = Object.keys(tally(second, "endpointId")).filter((id) => !first.some((d) => d.endpointId === id))
      assert.strictEqual(unserved.length, 4)
    }))

  it.effect("try a stalled endpoint one delivery at a time, and all stalled endpoints in 16 slots of a worker", () =>
    Effect.gen(function*() {
      yield* drain
      const t0 = nextDay()
      const sql = yield* SqlClient.SqlClient
      const stalledIds = Array.from({ length: 20 }, (_, i) => `wh_s${String(i).padStart(2, "0")}`)
      yield* sql`UPDATE webhook_endpoints SET stalled = true, consecutive_failures = 1 WHERE id IN ${sql.in(stalledIds)}`
      for (let i = 0; i < 20; i++) yield* enqueue(`org_s${String(i).padStart(2, "0")}`, 2)
      yield* enqueue("org_b")
      const first = yield* claim(t0, 32)
      const stalled = first.filter((d) => d.stalled)
      assert.strictEqual(stalled.length, stalledSlots)
      assert.isTrue(Object.values(tally(stalled, "endpointId")).every((n) => n === perStalledEndpoint))
      // The healthy organization's delivery is not among those held back.
      assert.deepStrictEqual(first.filter((d) => !d.stalled).map((d) => d.endpointId), ["wh_b1"])
      // With the stalled lane full, nothing more of it; with 6 of its slots free again, only the
      // 4 stalled endpoints that have nothing in flight can take one each.
      assert.deepStrictEqual(yield* claim(t0 + 1, 32, loadOf(first)), [])
      const six = loadOf(first, { stalled: stalledSlots - 6 })
      const more = yield* claim(t0 + 2, 32, six)
      assert.strictEqual(more.length, 4)
      assert.isTrue(more.every((d) => d.stalled && !first.some((f) => f.endpointId === d.endpointId)))
      // A success takes an endpoint out of the stalled lane, with its organization's row.
      assert.isTrue((yield* queueRow("endpoint", "wh_s00")).stalled)
      const s00 = [...first, ...more].find((d) => d.endpointId === "wh_s00")!
      yield* complete(s00, t0 + 3, "succeeded")
      assert.isFalse((yield* queueRow("endpoint", "wh_s00")).stalled)
      assert.strictEqual((yield* queueRow("organization", "org_s00", false)).readyMs, -Infinity)
      assert.strictEqual((yield* queueRow("organization", "org_s00", true)).readyMs, null)
      // Healthy again, it takes its next delivery at once.
      assert.deepStrictEqual(tally(yield* claim(t0 + 4, 32, loadOf([...first, ...more].filter((d) => d !== s00))), "endpointId"), { wh_s00: 1 })
    }))

  it.effect("give an endpoint with a late attempt nothing more", () =>
    Effect.gen(function*() {
      yield* drain
      const t0 = nextDay()
      yield* enqueue("org_a", 2)
      const batch = yield* claim(t0, 32, { ...noLoad, late: new Set(["wh_a1"]) })
      assert.deepStrictEqual(tally(batch, "endpointId"), { wh_a2: 2, wh_a3: 2 })
    }))

  it.effect("keep the queue rows never later than the deliveries, and settle those a claim finds early", () =>
    Effect.gen(function*() {
      yield* drain
      const t0 = nextDay()
      const sql = yield* SqlClient.SqlClient
      const operator = yield* WebhookOperatorRepo
      // Rows left early by the drain are settled by the first claim that finds them.
      assert.deepStrictEqual(yield* claim(t0, 32), [])
      assert.strictEqual((yield* queueRow("endpoint", "wh_c1")).readyMs, null)
      assert.strictEqual((yield* queueRow("organization", "org_c")).readyMs, null)
      // A new delivery makes its rows ready at once, in its own transaction.
      yield* enqueue("org_c")
      assert.strictEqual((yield* queueRow("endpoint", "wh_c1")).readyMs, -Infinity)
      assert.strictEqual((yield* queueRow("organization", "org_c")).readyMs, -Infinity)
      // Leased: served now; its rows say ready (early) until a claim finds nothing behind them and
      // settles them to the end of the lease, when the delivery is claimable again should the
      // worker die.
      const [leased] = yield* claim(t0, 32)
      assert.strictEqual(leased!.endpointId, "wh_c1")
      assert.strictEqual((yield* queueRow("endpoint", "wh_c1")).servedMs, t0)
      assert.strictEqual((yield* queueRow("organization", "org_c")).servedMs, t0)
      assert.deepStrictEqual(yield* claim(t0 + 1, 32), [])
      assert.deepStrictEqual(yield* queueRow("endpoint", "wh_c1"), { readyMs: t0 + leaseMs, servedMs: t0, stalled: false })
      assert.strictEqual((yield* queueRow("organization", "org_c")).readyMs, t0 + leaseMs)
      // It timed out after holding its slot: a retry in 5 s, in the stalled lane; the retry lowers
      // the rows at once.
      yield* complete(leased!, t0 + 10_000, { retryAtMs: t0 + 15_000, stalled: true })
      assert.deepStrictEqual(yield* queueRow("endpoint", "wh_c1"), { readyMs: t0 + 15_000, servedMs: t0, stalled: true })
      assert.strictEqual((yield* queueRow("organization", "org_c", true)).readyMs, t0 + 15_000)
      assert.strictEqual((yield* queueRow("organization", "org_c", false)).readyMs, null)
      assert.deepStrictEqual(yield* claim(t0 + 14_999, 32), [])
      // Paused, nothing of it is ready; resumed, its delivery is, at once.
      yield* sql`UPDATE webhook_endpoints SET paused_at = now() WHERE id = 'wh_c1'`
      assert.strictEqual((yield* queueRow("endpoint", "wh_c1")).readyMs, null)
      assert.deepStrictEqual(yield* claim(t0 + 20_000, 32), [])
      yield* sql`UPDATE webhook_deliveries SET status = 'held' WHERE endpoint_id = 'wh_c1' AND status = 'pending'`
      assert.deepStrictEqual(yield* operator.resume("wh_c1"), { wasPaused: true, released: 1 })
      assert.deepStrictEqual(yield* queueRow("endpoint", "wh_c1"), { readyMs: -Infinity, servedMs: t0, stalled: false })
      // A worker takes it and dies: another takes it when the lease runs out, not before.
      const [again] = yield* claim(t0 + 20_000, 32)
      assert.strictEqual(again!.id, leased!.id)
      assert.deepStrictEqual(yield* claim(t0 + 20_000 + leaseMs - 1, 32), [])
      const [takenOver] = yield* claim(t0 + 20_000 + leaseMs, 32)
      assert.strictEqual(takenOver!.id, leased!.id)
      // Done: its rows are early (nothing is pending) until a claim comes by after the lease's end.
      yield* complete(takenOver!, t0 + 90_000, "succeeded")
      assert.deepStrictEqual(yield* claim(t0 + 20_000 + 2 * leaseMs, 32), [])
      assert.deepStrictEqual(yield* queueRow("endpoint", "wh_c1"), { readyMs: null, servedMs: t0 + 20_000 + leaseMs, stalled: false })
      assert.strictEqual((yield* queueRow("organization", "org_c")).readyMs, null)
      expect(yield* claim(t0 + 20_000 + 3 * leaseMs, 32)).toEqual([])
    }))
})
