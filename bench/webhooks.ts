/**
 * `npm run bench:webhooks`: what webhook delivery costs, on real processes and
 * real PostgreSQL, against a receiver on loopback that answers 204 at once.
 *
 * 1. First-attempt latency: posts one at a time to a server whose worker is
 *    on; for each, the time from the POST's 200 (the commit is behind it) to
 *    the delivery's arrival.
 * 2. Throughput of one worker: a backlog of posts made with the worker off,
 *    then one dedicated worker (`npm run worker`) drains it.
 *
 * `-- --fairness` instead: one organization's endpoint takes every request
 * and never answers, and it has a backlog of 500 posts (BENCH_HANGING_BACKLOG);
 * then 5 posts of another organization (BENCH_FAIRNESS_POSTS), and the time
 * from each POST's 200 to its delivery, waited for up to 120 s in all
 * (BENCH_FAIRNESS_WAIT_MS), with the default WEBHOOK_TIMEOUT_MS (10 s).
 * Decision 0017.
 *
 * `-- --claim` instead: what one claim costs (`DeliveryQueue.claim`, 32 slots,
 * nothing in flight, in a transaction rolled back, BENCH_CLAIM_ROUNDS times)
 * as the endpoints with pending deliveries grow, 10, 1,000 and 10,000
 * (BENCH_CLAIM_SIZES), in three layouts: all of them in one organization,
 * each in an organization of its own, and one organization whose endpoints
 * all wait for a retry an hour away beside one endpoint with a due delivery.
 * Every endpoint has two pending deliveries. Decision 0026.
 *
 * BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres) is
 * an admin URL: a fresh database is created and dropped.
 */
import { Effect, Exit } from "effect"
import { SqlClient } from "effect/sql"
import { mkdtemp, writeFile } from "node:fs/promises"
import { createServer } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DeliveryQueue } from "../packages/server/dist/webhooks/DeliveryQueue.js"
import { widgetClient } from "../test/support/client.ts"
import { freshDatabase, percentile, startProcess, withSql } from "./support.ts"

const latencyPosts = Number(process.env["BENCH_LATENCY_POSTS"] ?? 200)
const backlog = Number(process.env["BENCH_BACKLOG"] ?? 3000)
const hangingBacklog = Number(process.env["BENCH_HANGING_BACKLOG"] ?? 500)
const otherPosts = Number(process.env["BENCH_FAIRNESS_POSTS"] ?? 5)
const fairnessWaitMs = Number(process.env["BENCH_FAIRNESS_WAIT_MS"] ?? 120_000)
const claimSizes = (process.env["BENCH_CLAIM_SIZES"] ?? "10,1000,10000").split(",").map(Number)
const claimRounds = Number(process.env["BENCH_CLAIM_ROUNDS"] ?? 30)
const ms = (n: number) => `${n.toFixed(1)} ms`

/** Arrival time of each delivery, by post id. */
const arrivals = new Map<string, number>()
const waiters: Array<() => void> = []
/** Requests to `/hang`, which are not answered while `hang` is on, and then refused with a 410. */
let hanging = 0
let hang = true
const receiver = createServer((req, res) => {
  if (req.url === "/hang") return void (hang ? hanging++ : res.writeHead(410).end())
  const chunks: Array<Buffer> = []
  req.on("data", (c: Buffer) => chunks.push(c))
  req.on("end", () => {
    const id = JSON.parse(Buffer.concat(chunks).toString("utf8")).data.id as string
    if (!arrivals.has(id)) arrivals.set(id, performance.now())
    res.writeHead(204).end()
    for (const wake of waiters.splice(0)) wake()
  })
})
await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r))
const receiverPort = (receiver.address() as { port: number }).port

const waitForArrivals = async (count: number, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs
  while (arrivals.size < count) {
    if (Date.now() > deadline) throw new Error(`only ${arrivals.size} of ${count} deliveries arrived`)
    await new Promise<void>((r) => (waiters.push(r), setTimeout(r, 50)))
  }
}

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
const database = await freshDatabase("bench")
const dir = await mkdtemp(join(tmpdir(), "hearken-bench-"))
await writeFile(join(dir, "fixture.json"), JSON.stringify({
  organizations: [{
    id: "org_bench",
    name: "Bench",
    statuses: [{ id: "st_bench", name: "Open" }],
    webhooks: [{ id: "wh_bench", url: `http://127.0.0.1:${receiverPort}/hook`, secret, events: ["feedback.post.created"] }],
    boards: [{ id: "b_bench", name: "Bench", slug: "bench", visibility: "public" }]
  }, {
    id: "org_hang",
    name: "Hanging",
    statuses: [{ id: "st_hang", name: "Open" }],
    webhooks: [{ id: "wh_hang", url: `http://127.0.0.1:${receiverPort}/hang`, secret, events: ["feedback.post.created"] }],
    boards: [{ id: "b_hang", name: "Hanging", slug: "hanging", visibility: "public" }]
  }]
}))
const env = {
  DATABASE_URL: database.url,
  SEED_FILE: join(dir, "fixture.json"),
  RATE_LIMIT_MULTIPLIER: "100000",
  WEBHOOK_ALLOW_PRIVATE_URLS: "true"
}

const post = async (origin: string, title: string, organization = "bench") => {
  const res = await widgetClient(origin).feedback({ organizationId: `org_${organization}`, boardId: `b_${organization}`, title, content: "<p>benchmark</p>" })
  if (res.status !== 200) throw new Error(`POST /feedback answered ${res.status}`)
  return (res.body as { id: string }).id
}

/** Another organization's deliveries while one endpoint hangs on a backlog. */
const fairness = async () => {
  const server = await startProcess("main.js", env)
  for (let i = 0; i < hangingBacklog; i += 25) {
    await Promise.all(Array.from({ length: Math.min(25, hangingBacklog - i) }, (_, j) => post(server.origin, `hanging ${i + j}`, "hang")))
  }
  // The worker has taken the hanging endpoint's share; the rest of its backlog waits.
  while (hanging < 16) await new Promise((r) => setTimeout(r, 20))
  const acknowledged = new Map<string, number>()
  for (let i = 0; i < otherPosts; i++) acknowledged.set(await post(server.origin, `another organization ${i}`), performance.now())
  await waitForArrivals(otherPosts, fairnessWaitMs).catch(() => undefined)
  const inFlight = hanging
  // Refuse and drop the hanging requests, so that the server's shutdown does not wait them out.
  hang = false
  receiver.closeAllConnections()
  await server.stop()
  const latencies = [...acknowledged].flatMap(([id, at]) => arrivals.has(id) ? [arrivals.get(id)! - at] : []).sort((a, b) => a - b)
  console.log(`${otherPosts} posts of another organization while one endpoint hangs on a backlog of ${hangingBacklog} (WEBHOOK_TIMEOUT_MS 10 s):`)
  console.log(`  arrived after the POST's 200: ${latencies.map(ms).join(", ") || "none"}`)
  if (latencies.length < otherPosts) console.log(`  ${otherPosts - latencies.length} not arrived after ${fairnessWaitMs / 1000} s`)
  console.log(`  ${inFlight} requests to the hanging endpoint by then`)
}

type Layout = "one organization" | "an organization each" | "waiting for a retry"

/** `size` endpoints with two pending deliveries each, laid out as `layout` says, in a database of their own. */
const populate = (sql: SqlClient.SqlClient, size: number, layout: Layout) =>
  Effect.gen(function*() {
    const orgOf = layout === "an organization each" ? `'org_c' || g` : `'org_c'`
    yield* sql.unsafe(`INSERT INTO organizations (id, name)
      SELECT DISTINCT ${orgOf}, 'Claim' FROM generate_series(1, ${size}) g ON CONFLICT DO NOTHING`)
    yield* sql.unsafe(`INSERT INTO webhook_endpoints (id, organization_id, url, secret, events)
      SELECT 'wh_c' || g, ${orgOf}, 'http://127.0.0.1:9/claim', '${secret}', '{feedback.post.created}' FROM generate_series(1, ${size}) g`)
    yield* sql.unsafe(`INSERT INTO webhook_events (id, organization_id, type, body)
      SELECT 'msg_c' || n || '_' || o, o, 'feedback.post.created', '{}'
      FROM (SELECT DISTINCT ${orgOf} AS o FROM generate_series(1, ${size}) g) orgs, generate_series(1, 2) n`)
    const due = layout === "waiting for a retry" ? `now() + interval '1 hour'` : `'-infinity'`
    yield* sql.unsafe(`INSERT INTO webhook_deliveries (id, event_id, endpoint_id, next_attempt_at, attempts)
      SELECT 'whd_c' || g || '_' || n, 'msg_c' || n || '_' || ${orgOf}, 'wh_c' || g, ${due}, ${layout === "waiting for a retry" ? 1 : 0}
      FROM generate_series(1, ${size}) g, generate_series(1, 2) n`)
    if (layout === "waiting for a retry") {
      yield* sql.unsafe(`INSERT INTO organizations (id, name) VALUES ('org_due', 'Due')`)
      yield* sql.unsafe(`INSERT INTO webhook_endpoints (id, organization_id, url, secret, events)
        VALUES ('wh_due', 'org_due', 'http://127.0.0.1:9/due', '${secret}', '{feedback.post.created}')`)
      yield* sql.unsafe(`INSERT INTO webhook_events (id, organization_id, type, body) VALUES ('msg_due', 'org_due', 'feedback.post.created', '{}')`)
      yield* sql.unsafe(`INSERT INTO webhook_deliveries (id, event_id, endpoint_id) VALUES ('whd_due', 'msg_due', 'wh_due')`)
    }
    yield* sql.unsafe(`ANALYZE`)
  })

/** Milliseconds of one claim each round, and how many deliveries it took; each round is rolled back. */
const timeClaims = (sql: SqlClient.SqlClient) =>
  Effect.gen(function*() {
    const queue = yield* DeliveryQueue
    // Every field the claim has taken over time, so that the same script measures an older build too.
    const claim = {
      nowMs: Date.now(),
      limit: 32,
      leaseMs: 30_000,
      token: "bench",
      perEndpoint: 16,
      busy: new Map<string, number>(),
      limits: { perEndpoint: 16, perStalledEndpoint: 1, perOrganization: 16, stalledSlots: 16 },
      load: { endpoints: new Map<string, number>(), organizations: new Map<string, number>(), stalled: 0, late: new Set<string>() }
    }
    const times: Array<number> = []
    let taken = 0
    for (let i = 0; i < claimRounds; i++) {
      const exit = yield* sql.withTransaction(Effect.gen(function*() {
        const started = performance.now()
        const rows = yield* queue.claim(claim)
        times.push(performance.now() - started)
        taken = rows.length
        return yield* Effect.fail("roll back" as const)
      })).pipe(Effect.exit)
      if (!Exit.isFailure(exit)) throw new Error("the claim's transaction was not rolled back")
    }
    times.sort((a, b) => a - b)
    return { p50: percentile(times, 0.5), p95: percentile(times, 0.95), taken }
  }).pipe(Effect.provide(DeliveryQueue.layer), Effect.provideService(SqlClient.SqlClient, sql))

/** What one claim costs as the endpoints with pending deliveries grow. */
const claimCost = async () => {
  console.log(`one claim (32 slots, nothing in flight), ${claimRounds} rounds each, p50 / p95:`)
  for (const layout of ["one organization", "an organization each", "waiting for a retry"] as const) {
    for (const size of claimSizes) {
      const db = await freshDatabase("claim")
      try {
        // The server creates the schema; its worker is off, so nothing is claimed behind the bench's back.
        const server = await startProcess("main.js", { DATABASE_URL: db.url, WEBHOOK_WORKER: "false" })
        await server.stop()
        await withSql(db.url, (sql) => populate(sql, size, layout))
        const { p50, p95, taken } = await withSql(db.url, timeClaims)
        console.log(`  ${layout}, ${String(size).padStart(6)} endpoints: ${ms(p50)} / ${ms(p95)}  (${taken} taken)`)
      } finally {
        await db.drop()
      }
    }
  }
}

/** First-attempt latency, and one worker's throughput. */
const latencyAndThroughput = async () => {
  // 1. First-attempt latency, worker in the server process.
  const server = await startProcess("main.js", env)
  for (let i = 0; i < 20; i++) await post(server.origin, `warm-up ${i}`)
  await waitForArrivals(20, 10_000)
  const latencies: Array<number> = []
  for (let i = 0; i < latencyPosts; i++) {
    const id = await post(server.origin, `latency ${i}`)
    const acknowledged = performance.now()
    await waitForArrivals(20 + i + 1, 10_000)
    latencies.push(Math.max(0, arrivals.get(id)! - acknowledged))
  }
  await server.stop()
  latencies.sort((a, b) => a - b)

  // 2. One dedicated worker drains a backlog.
  const api = await startProcess("main.js", { ...env, WEBHOOK_WORKER: "false", SEED_FILE: "" })
  const before = arrivals.size
  for (let i = 0; i < backlog; i += 25) {
    await Promise.all(Array.from({ length: Math.min(25, backlog - i) }, (_, j) => post(api.origin, `backlog ${i + j}`)))
  }
  const started = performance.now()
  const worker = await startProcess("worker.js", { ...env, SEED_FILE: "" })
  await waitForArrivals(before + backlog, 120_000)
  const drained = performance.now()
  const backlogArrivals = [...arrivals.values()].slice(before).sort((a, b) => a - b)
  await worker.stop()
  await api.stop()

  const first = backlogArrivals[0]!
  console.log(`first-attempt latency after the POST's 200, ${latencyPosts} posts one at a time:`)
  console.log(`  p50 ${ms(percentile(latencies, 0.5))}  p95 ${ms(percentile(latencies, 0.95))}  p99 ${ms(percentile(latencies, 0.99))}  max ${ms(latencies.at(-1)!)}`)
  console.log(`one worker, backlog of ${backlog}:`)
  console.log(`  ${(backlog / ((drained - first) / 1000)).toFixed(0)} deliveries/s from the first delivery to the last`)
  console.log(`  ${((drained - started) / 1000).toFixed(2)} s in all, including the worker's start (${((first - started) / 1000).toFixed(2)} s)`)
}

try {
  if (process.argv.includes("--fairness")) await fairness()
  else if (process.argv.includes("--claim")) await claimCost()
  else await latencyAndThroughput()
} finally {
  receiver.close()
  await database.drop()
}
