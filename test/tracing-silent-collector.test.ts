import { getMetricsFromIterator } from "prom2javascript"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { FloodingCollector, SilentCollector } from "./support/collector.js"
import { createDatabase, type TestDatabase } from "./support/database.js"
import { baseFixture } from "./support/fixtures.js"
import { freePort, processGroup } from "./support/process.js"
import { writeFixtureFile } from "./support/server.js"
import { eventually } from "./support/wait.js"
import { productionNodeOptions } from "./support/flood.js"
import { watchServer } from "./support/watch.js"

/**
 * Decision 0019: a collector that accepts connections and never answers.
 * Effect's exporter had no timeout and started one more request per 1,000
 * spans, each held forever: sockets and memory grew with the load. Now one
 * request at a time, cut at OTEL_EXPORTER_OTLP_TIMEOUT, its spans dropped and
 * counted, one warning, and the server answers throughout.
 */
let db: TestDatabase
let seedFile: string
const collector = await SilentCollector.start()
const flooding = await FloodingCollector.start()
const servers = processGroup(() => ({ DATABASE_URL: db.url, SEED_FILE: seedFile, LOG_LEVEL: "info", LOG_FORMAT: "json", RATE_LIMIT_MULTIPLIER: "1000" }))

beforeAll(async () => {
  ;[db, seedFile] = await Promise.all([createDatabase(), writeFixtureFile(baseFixture())])
})
afterAll(async () => {
  servers.killAll()
  await Promise.all([collector.close(), flooding.close(), db?.drop()])
})

const dropped = async (metricsPort: number) => {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
  const family = (await getMetricsFromIterator(text.split("\n")[Symbol.iterator]()))["hearken_trace_spans_dropped_total"]
  const value = (reason: string) =>
    (family?.data.find((d) => d.labels["reason"] === reason) as { value: number } | undefined)?.value ?? 0
  return { queue_full: value("queue_full"), timeout: value("timeout"), failed: value("failed") }
}

const warnings = (stdout: string) =>
  stdout.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line) as { level: string; message: string })
    .filter((entry) => entry.level === "WARN" && entry.message.startsWith("Traces: dropping spans"))

describe("a collector that never answers", () => {
  it("costs one socket at a time and a bounded queue: spans are dropped, counted and warned about once, and requests are answered", async () => {
    const metricsPort = await freePort()
    const server = await servers.start({
      METRICS_PORT: String(metricsPort),
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
      OTEL_BSP_SCHEDULE_DELAY: "100",
      OTEL_EXPORTER_OTLP_TIMEOUT: "300",
      OTEL_BSP_MAX_QUEUE_SIZE: "200",
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "50"
    })
    const boards = `${server.origin}/api/widget/v1/boards?organizationId=org_acme`

    // A bounded load: 2,400 requests, 20 at a time, several spans each.
    const statuses = new Map<number, number>()
    for (let round = 0; round < 120; round++) {
      const answers = await Promise.all(Array.from({ length: 20 }, () => fetch(boards).then(async (res) => (await res.arrayBuffer(), res.status))))
      for (const status of answers) statuses.set(status, (statuses.get(status) ?? 0) + 1)
    }
    expect(Object.fromEntries(statuses)).toEqual({ 200: 2400 })

    // Exports were tried, and never more than one connection was open at a time.
    expect(collector.accepted).toBeGreaterThanOrEqual(1)
    expect(collector.mostOpen).toBe(1)

    // Timed-out batches and spans refused by the full queue are counted.
    const counted = await eventually("timed-out spans counted", async () => {
      const now = await dropped(metricsPort)
      return now.timeout > 0 ? now : undefined
    })
    expect(counted.queue_full).toBeGreaterThan(0)
    expect(counted.failed).toBe(0)

    // A third attempt starts only after two timeouts and their backoff: still one warning, and still answering.
    await eventually("a third export attempt", async () => collector.accepted >= 3 || undefined, { timeoutMs: 30_000 })
    expect((await fetch(boards)).status).toBe(200)
    expect(collector.mostOpen).toBe(1)
    expect(await servers.stop(server)).toBe(0)
    expect(warnings(server.stdout()).map((entry) => entry.message)).toEqual([
      "Traces: dropping spans: the collector at " + collector.endpoint +
      " did not answer within 300 ms. They are counted in hearken_trace_spans_dropped_total; this is logged once, and again once exports succeed."
    ])
  })
})

/**
 * Decision 0028: the exporter read the collector's answer whole, however
 * long. A collector that answers each export with a body that never ends
 * filled memory until the export timeout. Now at most 64 KiB of it is read:
 * past that the export has failed (its spans dropped and counted) and the
 * connection is closed, long before the timeout. The server runs as
 * production runs it (a 256 MB old space); past 1.5 GB it is killed.
 */
describe("a collector whose answer never ends", () => {
  const exportTimeoutMs = 10_000
  it("fails the export at 64 KiB, long before its timeout; RSS ≤ 400 MB, /health ≤ 1 s", async () => {
    const metricsPort = await freePort()
    const server = await servers.start({
      NODE_OPTIONS: productionNodeOptions,
      METRICS_PORT: String(metricsPort),
      OTEL_EXPORTER_OTLP_ENDPOINT: flooding.endpoint,
      OTEL_BSP_SCHEDULE_DELAY: "100",
      OTEL_EXPORTER_OTLP_TIMEOUT: String(exportTimeoutMs)
    })
    const watching = watchServer(server, 1_500)
    try {
      const started = performance.now()
      const statuses: Array<number> = []
      for (let i = 0; i < 20; i++) statuses.push(await fetch(`${server.origin}/api/widget/v1/boards?organizationId=org_acme`).then((r) => r.status, () => 0))
      const counted = await eventually("an export counted as failed", async () => {
        if (server.child.exitCode !== null || server.child.signalCode !== null) return { queue_full: -1, timeout: -1, failed: -1 }
        const now = await dropped(metricsPort)
        return now.failed > 0 || now.timeout > 0 ? now : undefined
      }, { timeoutMs: 30_000, everyMs: 100 })
      const failedAfterMs = performance.now() - started
      const seen = await watching.stop()
      console.log(`peak RSS ${seen.peakRssMb} MB, slowest /health ${seen.slowestHealthMs} ms, first export failed after ${Math.round(failedAfterMs)} ms, ${Math.round(flooding.bytes / 2 ** 20)} MB sent`)

      expect(seen.killed).toBe(false)
      expect(statuses).toEqual(Array(20).fill(200))
      expect(counted.timeout).toBe(0)
      expect(counted.failed).toBeGreaterThan(0)
      expect(failedAfterMs).toBeLessThan(exportTimeoutMs / 2)
      expect(seen.peakRssMb).toBeLessThanOrEqual(400)
      expect(seen.slowestHealthMs).toBeLessThanOrEqual(1_000)
      // Each answer given up on is hung up on: none stays open.
      await eventually("the collector's answers closed", async () => flooding.openAnswers === 0 || undefined, { timeoutMs: 2_000 })
      expect(await servers.stop(server)).toBe(0)
    } finally {
      await watching.stop()
    }
  }, 60_000)
})
