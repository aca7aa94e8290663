import { mkdtemp, readFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { expect, it } from "vitest"
import { adminUrl } from "./support/database.js"
import { spawnScript } from "./support/process.js"
import { testRedisUrl } from "./support/redis.js"

const number = String.raw`[\d,.]+`

interface Measured {
  readonly requestsPerSecond: number
  readonly p99Ms: number
  readonly peakRssMb: number
  readonly non2xx: number
  readonly errors: number
  readonly costs: { readonly serverCpuMs: number; readonly postgresCpuMs: number; readonly transactions: number }
}

/** `node bench/load/main.ts ARGS` to a temporary results file: its exit code must be 0; gives its output and results. */
const runBench = async (args: ReadonlyArray<string>) => {
  const results = join(await mkdtemp(join(tmpdir(), "hearken-bench-")), "results.json")
  const redis = new URL(testRedisUrl)
  redis.pathname = "/14" // the bench's own database; the rate-limit tests flush 15
  const bench = spawnScript(join(import.meta.dirname, "..", "bench", "load", "main.ts"), args, {
    BENCH_DATABASE_URL: adminUrl,
    BENCH_REDIS_URL: redis.toString(),
    BENCH_RESULTS: results
  })
  const code = await bench.exited
  const output = bench.output()
  expect(code, output).toBe(0)
  return { output, written: JSON.parse(await readFile(results, "utf8")) }
}

/**
 * `npm run bench -- --smoke` (bench/load/main.ts): tiny data, one 2-second round
 * per endpoint and server, so that the load bench cannot rot. It runs on the
 * built server, which `npm test` builds first. Its results go to a temporary
 * file, never to bench/results.json.
 */
it("the load bench runs end to end: a row per endpoint, with numbers, and no errors", async () => {
  const { output, written } = await runBench(["--smoke"])

  for (const endpoint of ["GET /boards", "GET /updates", "POST /feedback"]) {
    // endpoint | Hearken req/s | baseline req/s | ratio (…) | p50 H / B | p99 H / B | p99 ratio (…) | errors H / B | RSS H / B |
    const row = new RegExp(
      String.raw`^\| ${endpoint} \| ${number} \| ${number} \| ${number} \(.*\) \| ${number} / ${number} \| ` +
        String.raw`${number} / ${number} \| ${number} \(.*\) \| 0 / 0 \| ${number} / ${number} \|$`,
      "m"
    )
    expect(output, endpoint).toMatch(row)
  }

  // POST /suggestions: Hearken alone (the baseline does not implement it).
  expect(output).toMatch(new RegExp(
    String.raw`^\| POST /suggestions \| ${number} \| – \| – \| ${number} / – \| ${number} / – \| – \| 0 / – \| ${number} / – \|$`,
    "m"
  ))

  expect(written.endpoints.map((e: { endpoint: string }) => e.endpoint)).toEqual(["GET /boards", "GET /updates", "POST /feedback"])
  expect(written.hearkenOnly.map((e: { endpoint: string }) => e.endpoint)).toEqual(["POST /suggestions"])
  const measured = [
    ...written.endpoints.flatMap((e: { hearken: Measured; baseline: Measured }) => [e.hearken, e.baseline]),
    ...written.hearkenOnly.map((e: { hearken: Measured }) => e.hearken)
  ]
  for (const server of measured) {
    expect(server.requestsPerSecond).toBeGreaterThan(0)
    expect(server.p99Ms).toBeGreaterThan(0)
    expect(server.peakRssMb).toBeGreaterThan(0)
    expect(server.non2xx + server.errors).toBe(0)
    // What a request cost (docs/operations.md, "Scale-out on paper"): the server and PostgreSQL spent CPU on each.
    expect(server.costs.serverCpuMs).toBeGreaterThan(0)
    expect(server.costs.postgresCpuMs).toBeGreaterThan(0)
    expect(server.costs.transactions).toBeGreaterThan(0)
  }
  // A post writes WAL; a read does not need to.
  const feedback = written.endpoints.find((e: { endpoint: string }) => e.endpoint === "POST /feedback")
  expect(feedback.hearken.costs.walBytes).toBeGreaterThan(1000)
  expect(feedback.hearken.costs.rowsWritten).toBeGreaterThanOrEqual(1)
  for (const name of ["GET /boards Hearken", "POST /feedback baseline", "POST /suggestions Hearken"]) {
    expect(output, name).toMatch(new RegExp(String.raw`^\| ${name} \| ${number} \| ${number} \| ${number} \| ${number} \|`, "m"))
  }
}, 90_000)

/** `npm run bench -- --observability --smoke`: metrics on against off, so that the comparison cannot rot either. */
it("the observability bench runs end to end: metrics off and on, scraped, with no errors", async () => {
  const { output, written } = await runBench(["--observability", "--smoke"])
  expect(output).toMatch(new RegExp(String.raw`^\| metrics off \| ${number} \| ${number} \| ${number} \| 0 \|$`, "m"))
  expect(output).toMatch(new RegExp(String.raw`^\| METRICS_PORT set \| ${number} \| ${number} \| ${number} \| 0 \|$`, "m"))
  expect(written.mode).toBe("observability")
  expect(written.off.requestsPerSecond).toBeGreaterThan(0)
  expect(written.metrics.requestsPerSecond).toBeGreaterThan(0)
  // One scrape a second during the 2-second runs.
  expect(written.scrapes).toBeGreaterThanOrEqual(1)
}, 90_000)
