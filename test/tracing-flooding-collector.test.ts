import { getMetricsFromIterator } from "prom2javascript"
import { afterAll, beforeAll, expect, it } from "vitest"
import { FloodingCollector } from "./support/collector.js"
import { createDatabase, type TestDatabase } from "./support/database.js"
import { baseFixture } from "./support/fixtures.js"
import { freePort, processGroup } from "./support/process.js"
import { writeFixtureFile } from "./support/server.js"
import { eventually } from "./support/wait.js"
import { watchServer } from "./support/watch.js"

/**
 * Decision 0028: the exporter read the collector's answer whole, however
 * long. A collector that answers each export with a body that never ends
 * filled memory until the export timeout. Now at most 64 KiB of it is read:
 * past that the export has failed (its spans dropped and counted) and the
 * connection is closed, long before the timeout. The server runs as
 * production runs it (a 256 MB old space); past 1.5 GB it is killed.
 */
const exportTimeoutMs = 10_000
let db: TestDatabase
let seedFile: string
const collector = await FloodingCollector.start()
const servers = processGroup(() => ({
  DATABASE_URL: db.url,
  SEED_FILE: seedFile,
  LOG_LEVEL: "error",
  RATE_LIMIT_MULTIPLIER: "1000",
  NODE_OPTIONS: "--max-semi-space-size=8 --max-old-space-size=256"
}))

beforeAll(async () => {
  ;[db, seedFile] = await Promise.all([createDatabase(), writeFixtureFile(baseFixture())])
})
afterAll(async () => {
  servers.killAll()
  await Promise.all([collector.close(), db?.drop()])
})

const dropped = async (metricsPort: number) => {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
  const family = (await getMetricsFromIterator(text.split("\n")[Symbol.iterator]()))["hearken_trace_spans_dropped_total"]
  const value = (reason: string) => (family?.data.find((d) => d.labels["reason"] === reason) as { value: number } | undefined)?.value ?? 0
  return { timeout: value("timeout"), failed: value("failed") }
}

it("a collector whose answer never ends: the export fails at 64 KiB, long before its timeout; RSS ≤ 400 MB, /health ≤ 1 s", async () => {
  const metricsPort = await freePort()
  const server = await servers.start({
    METRICS_PORT: String(metricsPort),
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
    OTEL_BSP_SCHEDULE_DELAY: "100",
    OTEL_EXPORTER_OTLP_TIMEOUT: String(exportTimeoutMs)
  })
  const watching = watchServer(server, 1_500)
  try {
    const started = performance.now()
    const statuses: Array<number> = []
    for (let i = 0; i < 20; i++) statuses.push(await fetch(`${server.origin}/api/widget/v1/boards?organizationId=org_acme`).then((r) => r.status, () => 0))
    const counted = await eventually("an export counted as failed", async () => {
      if (server.child.exitCode !== null || server.child.signalCode !== null) return { timeout: -1, failed: -1 }
      const now = await dropped(metricsPort)
      return now.failed > 0 || now.timeout > 0 ? now : undefined
    }, { timeoutMs: 30_000, everyMs: 100 })
    const failedAfterMs = performance.now() - started
    const seen = await watching.stop()
    console.log(`peak RSS ${seen.peakRssMb} MB, slowest /health ${seen.slowestHealthMs} ms, first export failed after ${Math.round(failedAfterMs)} ms, ${Math.round(collector.bytes / 2 ** 20)} MB sent`)

    expect(seen.killed).toBe(false)
    expect(statuses).toEqual(Array(20).fill(200))
    expect(counted.timeout).toBe(0)
    expect(counted.failed).toBeGreaterThan(0)
    expect(failedAfterMs).toBeLessThan(exportTimeoutMs / 2)
    expect(seen.peakRssMb).toBeLessThanOrEqual(400)
    expect(seen.slowestHealthMs).toBeLessThanOrEqual(1_000)
    // Each answer given up on is hung up on: none stays open.
    await eventually("the collector's answers closed", async () => collector.openAnswers === 0 || undefined, { timeoutMs: 2_000 })
    expect(await servers.stop(server)).toBe(0)
  } finally {
    await watching.stop()
  }
}, 60_000)
