import { getMetricsFromIterator, type PromHistogramData } from "prom2javascript"
import { afterAll, describe, expect, it } from "vitest"
import { freePort } from "./support/net.js"
import { endpoint, type Received, Receiver, webhookOrganization } from "./support/receiver.js"
import { widgetClient } from "./support/client.js"
import { startSeededServer, type TestServer, useServer } from "./support/server.js"
import { eventually } from "./support/wait.js"

/**
 * Decision 0026: organizations take turns, then their endpoints, and what
 * dead endpoints may hold of a worker is bounded. Two setups where one
 * organization, or 32, have endpoints that take the request and never
 * answer, with the default WEBHOOK_TIMEOUT_MS (10 s): the dead endpoints'
 * first attempts, their timing out, and their next attempts all fall inside
 * the healthy organization's 20 posts. Each of those must arrive within 2 s
 * of the POST's 200, and its one retry at the time it was scheduled for.
 */

const receiver = await Receiver.start()
afterAll(() => receiver.close())

// The dead endpoints take every request and never answer, until the tests end.
let dead = true
receiver.on("/dead", () => dead ? { status: 204, delayMs: 10 * 60_000 } : { status: 410 })
// The healthy organization answers at once; the post titled "Retry me" fails once with a 503.
const failedOnce = new Set<string>()
receiver.on("/ok", (_n, request) => {
  const { data } = JSON.parse(request.body) as { data: { id: string; title: string } }
  if (data.title !== "Retry me" || failedOnce.has(data.id)) return { status: 204 }
  failedOnce.add(data.id)
  return { status: 503 }
})

const healthy = webhookOrganization("org_ok", [endpoint("wh_ok", receiver.url("/ok"))])
const env = { WEBHOOK_ALLOW_PRIVATE_URLS: "true", LOG_LEVEL: "none" }

const post = (server: TestServer, organizationId: string, title: string) =>
  widgetClient(server).feedback({ organizationId, boardId: `b_${organizationId}`, title, content: "" })

const arrivalOf = async (postId: string): Promise<Received> =>
  eventually(`the delivery of ${postId}`, async () => receiver.at("/ok").find((r) => JSON.parse(r.body).data.id === postId), {
    timeoutMs: 30_000,
    everyMs: 10
  })

/**
 * 20 posts of the healthy organization, 600 ms apart, the 10th of them
 * failing once: each one's delay from its 200 to its first arrival, and the
 * retry's delay past the time its row was scheduled for.
 */
const healthyPosts = async (server: TestServer) => {
  const delays: Array<number> = []
  let retryId = ""
  const arrivals: Array<Promise<void>> = []
  for (let i = 0; i < 20; i++) {
    const title = i === 9 ? "Retry me" : `Healthy ${i}`
    const res = await post(server, "org_ok", title)
    expect(res.status).toBe(200)
    const acknowledged = Date.now()
    if (i === 9) retryId = res.body.id
    arrivals.push(arrivalOf(res.body.id).then((r) => void delays.push(r.at - acknowledged)))
    await new Promise((r) => setTimeout(r, 600))
  }
  await Promise.all(arrivals)
  const retry = await eventually("the retry", async () => receiver.at("/ok").filter((r) => JSON.parse(r.body).data.id === retryId)[1], {
    timeoutMs: 15_000,
    everyMs: 10
  })
  // The first attempt was answered 503; a success keeps the time the retry was scheduled for.
  const row = await eventually("the retry to be recorded", async () => {
    const [found] = await server.db.query((sql) =>
      sql`SELECT d.attempts, d.status, (extract(epoch FROM d.next_attempt_at) * 1000)::float8 AS "dueMs"
        FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
        WHERE d.endpoint_id = 'wh_ok' AND e.body::jsonb -> 'data' ->> 'id' = ${retryId}`
    )
    return found !== undefined && found["status"] === "succeeded" ? found : undefined
  }, { timeoutMs: 10_000 })
  expect(row["attempts"]).toBe(2)
  return { delays: delays.sort((a, b) => a - b), retryLate: retry.at - (row["dueMs"] as number) }
}

/** Scrapes the metrics port: the count and sum of the attempt-time histogram, by lane. */
const attemptTime = async (port: number) => {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
  const families = await getMetricsFromIterator(text.split("\n")[Symbol.iterator]())
  const data = (families["hearken_webhook_attempt_duration_seconds"]?.data ?? []) as Array<PromHistogramData>
  const lane = (name: string) => {
    const found = data.find((d) => d.labels["lane"] === name)
    return { count: found?.count ?? 0, sum: found?.sum ?? 0 }
  }
  const gauge = (families["hearken_webhook_attempts_in_flight"]?.data ?? []) as Array<{ labels: Record<string, string>; value: number }>
  const inFlight = Object.fromEntries(gauge.map((d) => [d.labels["state"], Number(d.value)]))
  return { healthy: lane("healthy"), stalled: lane("stalled"), inFlight }
}

/** Requests to the dead endpoints that arrived between `from` and `to` (ms since the epoch). */
const deadArrivals = (from: number, to: number) => receiver.at("/dead").filter((r) => r.at >= from && r.at < to).length

describe("one organization with 1,000 endpoints that never answer", () => {
  const server = useServer(() =>
    startSeededServer({
      organizations: [
        webhookOrganization("org_dead", Array.from({ length: 1000 }, (_, i) => endpoint(`wh_dead_${i}`, receiver.url("/dead")))),
        healthy
      ]
    }, env)
  )
  // Runs before the server closes: the attempts in flight end at once instead of waiting out the timeout.
  afterAll(() => {
    dead = false
    receiver.dropConnections()
  })

  it("delays no delivery of another organization more than 2 s, and keeps its retry on schedule", async () => {
    // A few anonymous posts there: 3,000 deliveries to endpoints that hang.
    for (let i = 0; i < 3; i++) expect((await post(server, "org_dead", `Dead ${i}`)).status).toBe(200)
    const [first] = await receiver.waitFor("/dead", 16)

    const { delays, retryLate } = await healthyPosts(server)
    console.log(`1,000 dead endpoints: delays ${delays.map((d) => d.toFixed(0)).join(", ")} ms; retry ${retryLate.toFixed(0)} ms past its time`)
    // p99 of 20 posts is the slowest of them.
    expect(delays.at(-1)!).toBeLessThan(2_000)
    // Due within WEBHOOK_RETRY_BASE_MS (5 s); claimed at the next poll (500 ms) after it falls due.
    expect(retryLate).toBeGreaterThanOrEqual(-50)
    expect(retryLate).toBeLessThan(1_500)
    // The dead organization held its 16 attempts and no more until they timed out (10 s).
    expect(deadArrivals(first!.at, first!.at + 9_000)).toBe(16)
  }, 60_000)
})

describe("32 organizations with one endpoint each that never answers", () => {
  const deadOrganizations = Array.from({ length: 32 }, (_, i) => webhookOrganization(`org_dead_${i}`, [endpoint(`wh_dead_${i}`, receiver.url("/dead"))]))
  let metricsPort = 0
  const server = useServer(async () => {
    metricsPort = await freePort()
    return startSeededServer({ organizations: [...deadOrganizations, healthy] }, { ...env, METRICS_PORT: String(metricsPort) })
  })
  afterAll(() => {
    dead = false
    receiver.dropConnections()
  })

  it("delays no delivery of another organization more than 2 s, keeps its retry on schedule, and bounds what they hold", async () => {
    dead = true
    // The metrics are the process's: other servers in it counted too.
    const before = await attemptTime(metricsPort)
    const started = Date.now()
    // Three anonymous posts on each of their public boards.
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all(deadOrganizations.map((o) => post(server, o.id, `Dead ${round}`)))
      expect(answers.map((a) => a.status)).toEqual(Array(32).fill(200))
    }
    await eventually("every dead endpoint to be tried", async () => deadArrivals(started, Infinity) >= 32 || undefined)

    const { delays, retryLate } = await healthyPosts(server)
    console.log(`32 dead organizations: delays ${delays.map((d) => d.toFixed(0)).join(", ")} ms; retry ${retryLate.toFixed(0)} ms past its time`)
    expect(delays.at(-1)!).toBeLessThan(2_000)
    expect(retryLate).toBeGreaterThanOrEqual(-50)
    expect(retryLate).toBeLessThan(1_500)

    // Their first attempts time out (10 s) and the endpoints are stalled: tried one delivery at a
    // time, 16 attempts at most for all of them, and what that costs is on /metrics.
    const after = await eventually("16 attempts of the stalled lane to time out", async () => {
      const now = await attemptTime(metricsPort)
      return now.stalled.count - before.stalled.count >= 16 ? now : undefined
    }, { timeoutMs: 30_000, everyMs: 250 })
    expect(after.healthy.count - before.healthy.count).toBeGreaterThanOrEqual(32 + 20)
    expect(after.healthy.sum - before.healthy.sum).toBeGreaterThan(32 * 9.9)
    expect(after.stalled.sum - before.stalled.sum).toBeGreaterThan(16 * 9.9)
    // What the worker has in flight, by state: the stalled lane's next attempts, holding a slot
    // for their first second and late after it; never more than 16 of them.
    expect(Object.keys(after.inFlight).sort()).toEqual(["healthy", "late", "stalled"])
    expect(after.inFlight["stalled"]! + after.inFlight["late"]!).toBeGreaterThanOrEqual(1)
    expect(after.inFlight["stalled"]!).toBeLessThanOrEqual(16)
    // Between the first timeouts (plus the time to claim) and the first stalled attempts' own timeouts,
    // only the stalled lane's 16 went out.
    const firstTry = Math.min(...receiver.at("/dead").filter((r) => r.at >= started).map((r) => r.at))
    expect(deadArrivals(firstTry + 13_000, firstTry + 19_500)).toBeLessThanOrEqual(16)
  }, 60_000)
})
