import { execFileSync } from "node:child_process"
import { readdir, readFile, readlink } from "node:fs/promises"
import { type AddressInfo, createServer } from "node:net"
import { getMetricsFromIterator, type PromHistogramData, type PromLabels, type PromMetric } from "prom2javascript"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createDatabase } from "./support/database.js"
import { startFakeEmbeddings } from "./support/embeddings.js"
import { baseFixture, fixturePost } from "./support/fixtures.js"
import { send } from "./support/http.js"
import { freePort } from "./support/net.js"
import { processGroup, spawnScript, spawnServer, workerScript } from "./support/process.js"
import { endpoint, Receiver, webhookOrganization } from "./support/receiver.js"
import { OwnRedis } from "./support/redis.js"
import { startSeededServer, type TestServer } from "./support/server.js"
import { eventually } from "./support/wait.js"

const receiver = await Receiver.start()
receiver.on("/down", () => ({ status: 500 }))
const fake = await startFakeEmbeddings({ dimensions: 16 })

const fixture = () => {
  const base = baseFixture()
  // A suggestion is embedded only on a board with a public post (decision 0025).
  base.organizations[0]!.posts = [fixturePost("p_dark", "Dark mode", "<p>Please add a dark theme</p>")]
  return {
    organizations: [
      ...base.organizations,
      webhookOrganization("org_hooks", [
        endpoint("wh_ok", receiver.url("/ok")),
        endpoint("wh_down", receiver.url("/down")),
        endpoint("wh_paused", receiver.url("/paused"), [])
      ])
    ]
  }
}

/** Parses the Prometheus text format (prom2javascript): families by name. */
const parse = (text: string) => getMetricsFromIterator(text.split("\n")[Symbol.iterator]())

const sameLabels = (a: PromLabels, b: Record<string, string>) =>
  Object.keys(a).length === Object.keys(b).length && Object.entries(b).every(([k, v]) => a[k] === v)

/** Scrapes `/metrics` and reads samples out of it. */
const scrape = async (port: number) => {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`)
  expect(response.status).toBe(200)
  expect(response.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8")
  const text = await response.text()
  const families = await parse(text)
  const family = (name: string): PromMetric => {
    const found = families[name]
    if (found === undefined) throw new Error(`no metric ${name} in the scrape`)
    return found
  }
  /** A counter's or gauge's value; a series that does not exist yet counts as 0. */
  const value = (name: string, labels: Record<string, string> = {}) => {
    const found = families[name]?.data.find((d) => sameLabels(d.labels, labels))
    return found === undefined ? 0 : (found as { value: number }).value
  }
  const has = (name: string, labels: Record<string, string> = {}) =>
    families[name]?.data.some((d) => sameLabels(d.labels, labels)) === true
  const histogram = (name: string, labels: Record<string, string>) =>
    (family(name).data as Array<PromHistogramData>).find((d) => sameLabels(d.labels, labels))
  return { text, families, family, value, has, histogram }
}

describe("GET /metrics on METRICS_PORT", () => {
  let server: TestServer
  let metricsPort: number
  beforeAll(async () => {
    metricsPort = await freePort()
    server = await startSeededServer(fixture(), {
      METRICS_PORT: String(metricsPort),
      RATE_LIMIT_MULTIPLIER: "1",
      WEBHOOK_ALLOW_PRIVATE_URLS: "true",
      WEBHOOK_RETRY_BASE_MS: "3600000",
      EMBEDDINGS_URL: fake.url,
      EMBEDDINGS_DIMENSIONS: "16",
      EMBEDDINGS_RETRY_BASE_MS: "3600000"
    })
  })
  afterAll(async () => {
    await server?.close()
    await receiver.close()
    await fake.close()
  })

  it("counts requests by endpoint and status, with latency histograms", async () => {
    const before = await scrape(metricsPort)
    const boards200 = before.value("hearken_http_requests_total", { endpoint: "boards", status: "200" })
    const boards400 = before.value("hearken_http_requests_total", { endpoint: "boards", status: "400" })

    expect((await send(`${server.api}/boards?organizationId=org_acme`, { from: "127.0.0.11" })).status).toBe(200)
    expect((await send(`${server.api}/boards?organizationId=org_acme`, { from: "127.0.0.11" })).status).toBe(200)
    expect((await send(`${server.api}/boards`, { from: "127.0.0.11" })).status).toBe(400)
    expect((await send(`${server.origin}/no/such/route/123`)).status).toBe(404)

    const after = await scrape(metricsPort)
    expect(after.family("hearken_http_requests_total").type).toBe("counter")
    expect(after.value("hearken_http_requests_total", { endpoint: "boards", status: "200" })).toBe(boards200 + 2)
    expect(after.value("hearken_http_requests_total", { endpoint: "boards", status: "400" })).toBe(boards400 + 1)
    // A path a client makes up is never a label.
    expect(after.value("hearken_http_requests_total", { endpoint: "other", status: "404" })).toBeGreaterThanOrEqual(1)
    const labels = after.family("hearken_http_requests_total").data.map((d) => d.labels["endpoint"])
    expect(new Set(labels).size).toBeLessThanOrEqual(7)
    expect(labels.every((l) => l !== undefined && ["boards", "updates", "feedback", "suggestions", "health", "docs", "widget", "other"].includes(l))).toBe(true)

    expect(after.family("hearken_http_request_duration_seconds").type).toBe("histogram")
    const boards = after.histogram("hearken_http_request_duration_seconds", { endpoint: "boards" })!
    const bounds = Object.keys(boards.buckets).map((le) => le === "+Inf" ? Infinity : Number(le)).sort((x, y) => x - y)
    expect(bounds).toEqual([0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, Infinity])
    const beforeCount = before.has("hearken_http_request_duration_seconds", { endpoint: "boards" })
      ? before.histogram("hearken_http_request_duration_seconds", { endpoint: "boards" })!.count
      : 0
    expect(boards.count).toBe(beforeCount + 3)
    expect(boards.buckets["+Inf"]).toBe(boards.count)
    // Cumulative: each bucket counts at least what the one below it does.
    const counts = bounds.map((le) => boards.buckets[le === Infinity ? "+Inf" : String(le)]!)
    expect(counts).toEqual([...counts].sort((x, y) => x - y))
    expect(boards.sum).toBeGreaterThan(0)
  })

  it("counts rate-limit decisions: allowed and limited (a 429)", async () => {
    const before = await scrape(metricsPort)
    const draft = { organizationId: "org_acme", boardId: "b_feat", title: "dark mode", content: "" }
    const statuses = []
    for (let i = 0; i < 6; i++) statuses.push((await send(`${server.api}/suggestions`, { from: "127.0.0.12", body: draft })).status)
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429])

    const after = await scrape(metricsPort)
    const decisions = (s: typeof before, decision: string) =>
      s.value("hearken_rate_limit_decisions_total", { endpoint: "suggestions", decision })
    expect(decisions(after, "allowed") - decisions(before, "allowed")).toBe(5)
    expect(decisions(after, "limited") - decisions(before, "limited")).toBe(1)
    expect(decisions(after, "unavailable") - decisions(before, "unavailable")).toBe(0)
    // Every endpoint's series exists from the start, at 0 when nothing happened.
    expect(after.has("hearken_rate_limit_decisions_total", { endpoint: "updates", decision: "unavailable" })).toBe(true)
    expect(after.value("hearken_rate_limit_decisions_total", { endpoint: "updates", decision: "unavailable" })).toBe(0)
    expect(
      after.value("hearken_http_requests_total", { endpoint: "suggestions", status: "429" }) -
        before.value("hearken_http_requests_total", { endpoint: "suggestions", status: "429" })
    ).toBe(1)
  })

  it("counts webhook attempts by outcome and reads the queue from the database", async () => {
    const before = await scrape(metricsPort)
    const created = await send(`${server.api}/feedback`, {
      from: "127.0.0.13",
      body: { organizationId: "org_hooks", boardId: "b_org_hooks", title: "Hooked", content: "" }
    })
    expect(created.status).toBe(200)
    await receiver.waitFor("/ok", 1)
    await receiver.waitFor("/down", 1)
    // A paused endpoint, and a due delivery a worker holds (leased), waiting for a minute.
    await server.db.query((sql) => sql`UPDATE webhook_endpoints SET paused_at = now() WHERE id = 'wh_paused'`)
    await server.db.query((sql) => sql`INSERT INTO webhook_events (id, organization_id, type, body)
      VALUES ('msg_stuck', 'org_hooks', 'feedback.post.created', '{}')`)
    await server.db.query((sql) => sql`INSERT INTO webhook_deliveries (id, event_id, endpoint_id, next_attempt_at, created_at, lease_until, lease_token)
      VALUES ('whd_stuck', 'msg_stuck', 'wh_ok', now() - interval '60 seconds', now() - interval '90 seconds', now() + interval '1 hour', 'x')`)

    const after = await eventually("both attempts recorded", async () => {
      const s = await scrape(metricsPort)
      const delta = (outcome: string) =>
        s.value("hearken_webhook_attempts_total", { outcome }) - before.value("hearken_webhook_attempts_total", { outcome })
      return delta("succeeded") === 1 && delta("retry") === 1 ? s : undefined
    })
    expect(after.value("hearken_webhook_attempts_total", { outcome: "failed" })).toBe(0)
    expect(after.family("hearken_webhook_queue_depth").type).toBe("gauge")
    expect(after.value("hearken_webhook_queue_depth", { state: "due" })).toBe(1)
    expect(after.value("hearken_webhook_queue_depth", { state: "scheduled" })).toBe(1)
    expect(after.value("hearken_webhook_queue_depth", { state: "held" })).toBe(0)
    expect(after.value("hearken_webhook_paused_endpoints")).toBe(1)
    const age = after.value("hearken_webhook_oldest_due_age_seconds")
    expect(age).toBeGreaterThanOrEqual(60)
    expect(age).toBeLessThan(90)
  })

  it("counts embeddings calls by outcome and reports the back-fill backlog", async () => {
    // The new post above, and every other public post, get embedded: the backlog drains to 0.
    const drained = await eventually("the back-fill to finish", async () => {
      const s = await scrape(metricsPort)
      return s.has("hearken_embeddings_backlog_posts") && s.value("hearken_embeddings_backlog_posts") === 0 ? s : undefined
    })
    expect(drained.value("hearken_embeddings_calls_total", { outcome: "ok" })).toBeGreaterThanOrEqual(1)
    const okCount = drained.histogram("hearken_embeddings_call_duration_seconds", { outcome: "ok" })?.count
    expect(okCount).toBe(drained.value("hearken_embeddings_calls_total", { outcome: "ok" }))

    fake.mode = "error"
    const draft = { organizationId: "org_acme", boardId: "b_feat", title: "a draft never embedded before", content: "" }
    expect((await send(`${server.api}/suggestions`, { from: "127.0.0.14", body: draft })).status).toBe(200)
    fake.mode = "ok"
    const after = await scrape(metricsPort)
    expect(after.value("hearken_embeddings_calls_total", { outcome: "error" }) - drained.value("hearken_embeddings_calls_total", { outcome: "error" })).toBe(1)
    expect(after.value("hearken_embeddings_calls_total", { outcome: "timeout" })).toBe(0)
  })

  it("reports this instance's pool", async () => {
    const s = await scrape(metricsPort)
    expect(s.value("hearken_db_pool_max_connections")).toBe(10)
    const inUse = s.value("hearken_db_pool_connections", { state: "in_use" })
    const idle = s.value("hearken_db_pool_connections", { state: "idle" })
    expect(s.has("hearken_db_pool_connections", { state: "in_use" })).toBe(true)
    // At least the webhook worker's LISTEN session is open; the scrape's own session is not counted.
    expect(inUse + idle).toBeGreaterThanOrEqual(1)
    expect(inUse + idle).toBeLessThanOrEqual(10)
  })

  it("reports the process: memory, event-loop delay, time in GC, handles, and which build is running (issue 29)", async () => {
    const s = await scrape(metricsPort)
    expect(s.value("process_resident_memory_bytes")).toBeGreaterThan(20 * 1024 * 1024)
    expect(s.value("nodejs_heap_used_bytes")).toBeGreaterThan(1024 * 1024)
    expect(s.value("nodejs_heap_total_bytes")).toBeGreaterThanOrEqual(s.value("nodejs_heap_used_bytes"))
    expect(s.has("nodejs_external_memory_bytes")).toBe(true)
    for (const quantile of ["0.5", "0.99", "1"]) {
      expect(s.has("nodejs_eventloop_lag_seconds", { quantile }), quantile).toBe(true)
      expect(s.value("nodejs_eventloop_lag_seconds", { quantile })).toBeLessThan(10)
    }
    expect(s.value("nodejs_eventloop_lag_seconds", { quantile: "1" })).toBeGreaterThanOrEqual(s.value("nodejs_eventloop_lag_seconds", { quantile: "0.5" }))
    for (const kind of ["minor", "major", "incremental", "weakcb"]) expect(s.has("nodejs_gc_duration_seconds_total", { kind }), kind).toBe(true)
    // The server runs in this process: churning short-lived memory here makes the young generation collect.
    // The collector's entries reach the observer a little later, so scrape until they have.
    await expect.poll(async () => {
      for (let i = 0; i < 20; i++) new Array(100_000).fill(i)
      return (await scrape(metricsPort)).value("nodejs_gc_duration_seconds_total", { kind: "minor" })
    }, { timeout: 15_000, interval: 200 }).toBeGreaterThan(0)
    const commit = execFileSync("git", ["rev-parse", "HEAD"], { encoding: "utf8" }).trim()
    const last = await scrape(metricsPort)
    expect(last.value("hearken_build_info", { version: "0.1.0", commit, node: process.version })).toBe(1)
    // Both servers listen in this process: at least those two handles, counted by type and in all.
    expect(last.value("nodejs_active_resources", { type: "TCPServerWrap" })).toBeGreaterThanOrEqual(2)
    expect(last.value("nodejs_active_resources_total")).toBeGreaterThanOrEqual(last.value("nodejs_active_resources", { type: "TCPServerWrap" }))
  })

  it("serves nothing else on the metrics port, and no /metrics on the public port", async () => {
    const other = await send(`http://127.0.0.1:${metricsPort}/api/widget/v1/boards?organizationId=org_acme`)
    expect(other.status).toBe(404)
    expect(other.body).toEqual({ _tag: "NotFoundError" })
    const publicMetrics = await send(`${server.origin}/metrics`)
    expect(publicMetrics.status).toBe(404)
    expect(publicMetrics.body._tag).toBe("NotFoundError")
  })
})

describe("with the limiter's Redis down", () => {
  let redis: OwnRedis
  let server: TestServer
  let metricsPort: number
  beforeAll(async () => {
    redis = await OwnRedis.start()
    metricsPort = await freePort()
    server = await startSeededServer(baseFixture(), { METRICS_PORT: String(metricsPort), REDIS_URL: redis.url })
  })
  afterAll(async () => {
    await server?.close()
    await redis?.kill()
  })

  it("counts the 503s as unavailable decisions", async () => {
    const before = await scrape(metricsPort)
    expect((await send(`${server.api}/updates?organizationId=org_acme`, { from: "127.0.0.15" })).status).toBe(200)
    await redis.kill()
    const refused = await send(`${server.api}/updates?organizationId=org_acme`, { from: "127.0.0.15" })
    expect(refused.status).toBe(503)
    expect(refused.body._tag).toBe("RateLimitUnavailableError")
    const after = await scrape(metricsPort)
    const delta = (name: string, labels: Record<string, string>) => after.value(name, labels) - before.value(name, labels)
    expect(delta("hearken_rate_limit_decisions_total", { endpoint: "updates", decision: "allowed" })).toBe(1)
    expect(delta("hearken_rate_limit_decisions_total", { endpoint: "updates", decision: "unavailable" })).toBe(1)
    expect(delta("hearken_rate_limit_decisions_total", { endpoint: "updates", decision: "limited" })).toBe(0)
    expect(delta("hearken_http_requests_total", { endpoint: "updates", status: "503" })).toBe(1)
    // Back, so that the server's Redis client closes at once.
    await redis.restart()
  })
})

/** The TCP ports process `pid` listens on, from /proc (Linux): its socket inodes matched against the LISTEN rows. */
const listeningPorts = async (pid: number) => {
  const fds = await readdir(`/proc/${pid}/fd`)
  const inodes = new Set<string>()
  for (const fd of fds) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => "")
    const match = /^socket:\[(\d+)\]$/.exec(target)
    if (match) inodes.add(match[1]!)
  }
  const ports: Array<number> = []
  for (const table of ["tcp", "tcp6"]) {
    for (const line of (await readFile(`/proc/${pid}/net/${table}`, "utf8")).split("\n").slice(1)) {
      const [, local, , state, , , , , , inode] = line.trim().split(/\s+/)
      if (state === "0A" && inode !== undefined && inodes.has(inode)) ports.push(parseInt(local!.split(":")[1]!, 16))
    }
  }
  return ports.sort((a, b) => a - b)
}

describe("as a process", () => {
  const group = processGroup(() => ({ LOG_LEVEL: "error" }))
  afterAll(() => group.killAll())

  it.each([
    ["without METRICS_PORT: the public port alone", false],
    ["with METRICS_PORT: the public port and the metrics port", true]
  ] as const)("listens %s", async (_, withMetrics) => {
    const db = await createDatabase()
    try {
      const metricsPort = await freePort()
      const server = await group.start({ DATABASE_URL: db.url, ...(withMetrics ? { METRICS_PORT: String(metricsPort) } : {}) })
      const publicPort = Number(new URL(server.origin).port)
      expect(await listeningPorts(server.child.pid!)).toEqual([publicPort, ...(withMetrics ? [metricsPort] : [])].sort((a, b) => a - b))
      const publicMetrics = await send(`${server.origin}/metrics`)
      expect(publicMetrics.status).toBe(404)
      expect(publicMetrics.body._tag).toBe("NotFoundError")
      if (withMetrics) {
        const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
        const names = Object.keys(await parse(text))
        expect(names).toContain("hearken_http_requests_total")
        expect(names).toContain("hearken_webhook_queue_depth")
      }
      expect(await group.stop(server)).toBe(0)
    } finally {
      await db.drop()
    }
  })

  it("refuses to start, naming METRICS_PORT, when that port is taken", async () => {
    const db = await createDatabase()
    const taken = createServer()
    try {
      await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve))
      const port = (taken.address() as AddressInfo).port
      const server = group.track(spawnServer({ DATABASE_URL: db.url, LOG_LEVEL: "error", METRICS_PORT: String(port) }, await freePort()))
      expect(await server.closed).toBe(1)
      expect(server.stderr().trim()).toBe(
        `hearken: Invalid configuration: METRICS_PORT cannot be listened on at 127.0.0.1:${port}: the address is in use`
      )
    } finally {
      taken.close()
      await db.drop()
    }
  })

  it("serves /metrics from a dedicated worker (npm run worker) with METRICS_PORT", async () => {
    const db = await createDatabase()
    try {
      const metricsPort = await freePort()
      const worker = group.track(spawnScript(workerScript, [], { DATABASE_URL: db.url, LOG_LEVEL: "error", METRICS_PORT: String(metricsPort) }))
      const text = await eventually("the worker's metrics", () =>
        fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((r) => r.status === 200 ? r.text() : undefined, () => undefined))
      const families = await parse(text)
      expect(families["hearken_webhook_attempts_total"]?.data.map((d) => d.labels["outcome"]).sort()).toEqual(["failed", "retry", "succeeded"])
      expect(families["hearken_webhook_queue_depth"]?.type).toBe("gauge")
      // No HTTP API in a worker: no request metrics.
      expect(families["hearken_http_requests_total"]).toBeUndefined()
      expect(await listeningPorts(worker.child.pid!)).toEqual([metricsPort])
      expect(await group.stop(worker)).toBe(0)
    } finally {
      await db.drop()
    }
  })
})
