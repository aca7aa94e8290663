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
 * BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres) is
 * an admin URL: a fresh database is created and dropped.
 */
import { mkdtemp, writeFile } from "node:fs/promises"
import { createServer } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freshDatabase, percentile, startProcess } from "./support.ts"

const latencyPosts = Number(process.env["BENCH_LATENCY_POSTS"] ?? 200)
const backlog = Number(process.env["BENCH_BACKLOG"] ?? 3000)
const hangingBacklog = Number(process.env["BENCH_HANGING_BACKLOG"] ?? 500)
const otherPosts = Number(process.env["BENCH_FAIRNESS_POSTS"] ?? 5)
const fairnessWaitMs = Number(process.env["BENCH_FAIRNESS_WAIT_MS"] ?? 120_000)
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
  const res = await fetch(`${origin}/api/widget/v1/feedback`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ organizationId: `org_${organization}`, boardId: `b_${organization}`, title, content: "<p>benchmark</p>" })
  })
  if (res.status !== 200) throw new Error(`POST /feedback answered ${res.status}`)
  return ((await res.json()) as { id: string }).id
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
  else await latencyAndThroughput()
} finally {
  receiver.close()
  await database.drop()
}
