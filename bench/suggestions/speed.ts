/**
 * `npm run bench:suggestions`: `POST /suggestions` latency and throughput as
 * a board grows, through the real HTTP endpoint of a server process on real
 * PostgreSQL.
 *
 * For each size (1k, 10k, 100k public posts on one board; BENCH_SIZES to
 * change, e.g. BENCH_SIZES=1000000) the board is filled with synthetic posts
 * whose words are drawn, Zipf-distributed, from a vocabulary of 60,000: the
 * labelled set's own words (six languages) as the most common ones, then
 * made-up rarer words (halves of two real ones), so that a larger board uses
 * more distinct words, as real text does (Heaps' law); the fill's time is
 * reported. Then the server process is restarted (its caches and connections
 * start empty; PostgreSQL, shared by everything on the machine, keeps its
 * own), and:
 * - first 100 after a restart: the labelled set's first 100 drafts, one at a
 *   time, on the restarted server: p50, p95;
 * - warm: then three rounds of all the drafts, one request at a time: p50,
 *   p95, p99;
 * - concurrent (10k only, BENCH_CONCURRENT_SIZE to change): 50 connections
 *   for 10 s: requests per second and p99.
 *
 * Every answer's status is counted and printed, with the answers that gave
 * way to a cheaper half (`hearken_suggestions_degraded_total`, read from the
 * server's metrics): any answer but 200 fails the bench, after the table.
 *
 * BENCH_DATASET names another labelled set to draw words and drafts from.
 * BENCH_KEEP=1 keeps the database and prints its URL; BENCH_REUSE_DATABASE
 * set to that URL measures it again, filling only the posts it lacks: a 1M
 * board is filled once and measured many times (drop it when done). The
 * results go to BENCH_RESULTS (default bench/results-suggestions.json).
 *
 * The posts are inserted with SQL, their lexicon computed by the server's own
 * function, so that filling 100k posts takes seconds and 1M minutes, not an
 * import (`synthetic.ts`, shared with `vector.ts`).
 */
import { writeFileSync } from "node:fs"
import { cpus } from "node:os"
import { join } from "node:path"
import { freePort } from "../../test/support/net.ts"
import { freshDatabase, percentile, startProcess, withSql } from "../support.ts"
import { loadDataset } from "../../test/support/dataset.ts"
import { boardId, createBoard, synthetic, timeSuggestion } from "./synthetic.ts"

const sizes = (process.env["BENCH_SIZES"] ?? "1000,10000,100000").split(",").map(Number)
const concurrentSize = Number(process.env["BENCH_CONCURRENT_SIZE"] ?? 10_000)
const dataset = loadDataset(process.env["BENCH_DATASET"])
const reuse = process.env["BENCH_REUSE_DATABASE"]
const resultsPath = process.env["BENCH_RESULTS"] ?? join(import.meta.dirname, "..", "results-suggestions.json")
const { fill } = synthetic(dataset)
/** Drafts timed on a server just restarted. */
const afterRestart = 100

const database = reuse === undefined
  ? await freshDatabase("speed")
  : { url: reuse, drop: async () => console.log(`kept ${reuse}`) }
const dbUrl = database.url
const metricsPort = await freePort()
const start = () => startProcess("main.js", { DATABASE_URL: dbUrl, RATE_LIMIT_MULTIPLIER: "1000000", METRICS_PORT: String(metricsPort) })
let server = await start()

/** Statuses answered, by code, over the whole run. */
const statuses = new Map<number, number>()
const suggest = async (draft: { readonly title: string; readonly content: string }) => {
  const { ms, status } = await timeSuggestion(server.origin, draft)
  statuses.set(status, (statuses.get(status) ?? 0) + 1)
  return ms
}

/** `hearken_suggestions_degraded_total` by `to`, from the running server's metrics. */
const degraded = async () => {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
  const count = (to: string) =>
    Number(new RegExp(`^hearken_suggestions_degraded_total\\{to="${to}"\\} (\\S+)`, "m").exec(text)?.[1] ?? 0)
  return { lexical: count("lexical"), none: count("none") }
}

const results: Array<Record<string, unknown>> = []
try {
  const [{ n: present } = { n: 0 }] = await withSql(dbUrl, (sql) => sql<{ n: number }>`SELECT count(*)::int AS n FROM posts WHERE board_id = ${boardId}`)
  if (reuse === undefined) await createBoard(dbUrl)
  else console.log(`reusing ${reuse}: ${present.toLocaleString("en")} posts on the board`)
  console.log(
    "| public posts on the board | fill | first 100 after restart p50 | p95 | warm p50 | p95 | p99 | concurrent (50) req/s | concurrent p99 | degraded (lexical, none) |"
  )
  console.log("|---|---|---|---|---|---|---|---|---|---|")
  let filled = present
  for (const size of sizes) {
    const fillSeconds = size > filled ? await fill(dbUrl, filled, size) : 0
    filled = Math.max(filled, size)
    await server.stop()
    server = await start()
    const cold: Array<number> = []
    for (const draft of dataset.drafts.slice(0, afterRestart)) cold.push(await suggest(draft))
    cold.sort((a, b) => a - b)
    const warm: Array<number> = []
    for (let round = 0; round < 3; round++) for (const draft of dataset.drafts) warm.push(await suggest(draft))
    warm.sort((a, b) => a - b)
    let concurrent: { readonly perSecond: number; readonly p99Ms: number } | undefined
    if (size === concurrentSize) {
      const latencies: Array<number> = []
      const until = performance.now() + 10_000
      const started = performance.now()
      await Promise.all(Array.from({ length: 50 }, async (_, c) => {
        for (let i = c; performance.now() < until; i += 50) latencies.push(await suggest(dataset.drafts[i % dataset.drafts.length]!))
      }))
      latencies.sort((a, b) => a - b)
      concurrent = { perSecond: latencies.length / ((performance.now() - started) / 1000), p99Ms: percentile(latencies, 0.99) }
    }
    const gaveWay = await degraded()
    const ms = (sorted: ReadonlyArray<number>, p: number) => `${percentile(sorted, p).toFixed(1)} ms`
    console.log(
      `| ${filled.toLocaleString("en")} | ${fillSeconds > 0 ? `${fillSeconds.toFixed(0)} s` : "reused"} | ${ms(cold, 0.5)} | ${ms(cold, 0.95)} | ${
        ms(warm, 0.5)
      } | ${ms(warm, 0.95)} | ${ms(warm, 0.99)} | ${concurrent ? concurrent.perSecond.toFixed(0) : "–"} | ${
        concurrent ? `${concurrent.p99Ms.toFixed(1)} ms` : "–"
      } | ${gaveWay.lexical}, ${gaveWay.none} |`
    )
    results.push({
      posts: filled,
      fillSeconds: fillSeconds > 0 ? fillSeconds : null,
      afterRestart: { requests: cold.length, p50Ms: percentile(cold, 0.5), p95Ms: percentile(cold, 0.95) },
      warm: { requests: warm.length, p50Ms: percentile(warm, 0.5), p95Ms: percentile(warm, 0.95), p99Ms: percentile(warm, 0.99) },
      concurrent: concurrent ?? null,
      degraded: gaveWay
    })
  }
} finally {
  await server.stop()
  await database.drop()
}

const answered = Object.fromEntries([...statuses].sort(([a], [b]) => a - b))
console.log(`\nstatuses answered: ${JSON.stringify(answered)}`)
writeFileSync(
  resultsPath,
  `${
    JSON.stringify(
      { mode: "suggestions", date: new Date().toISOString(), node: process.version, cpus: cpus().length, statuses: answered, sizes: results },
      null,
      2
    )
  }\n`
)
const failed = [...statuses].filter(([status]) => status !== 200)
if (failed.length > 0) {
  console.error(`FAILED: ${failed.map(([status, n]) => `${n} answers ${status}`).join(", ")}; every suggestion must answer 200`)
  process.exitCode = 1
}
