/**
 * `npm run bench:suggestions`: `POST /suggestions` latency and throughput as
 * a board grows, through the real HTTP endpoint of a server process on real
 * PostgreSQL.
 *
 * For each size (1k, 10k, 100k public posts on one board; BENCH_SIZES to
 * change) the board is filled with synthetic posts whose words are drawn,
 * Zipf-distributed, from a vocabulary of 60,000: the labelled set's own words
 * (six languages) as the most common ones, then made-up rarer words (halves
 * of two real ones), so that a larger board uses more distinct words, as real
 * text does (Heaps' law), then:
 * - sequential: the labelled set's drafts (a title and a few sentences), one
 *   request at a time: p50, p95, p99;
 * - concurrent (10k only, BENCH_CONCURRENT_SIZE to change): 50 connections
 *   for 10 s: requests per second and p99.
 *
 * BENCH_DATASET names another labelled set to draw words and drafts from.
 *
 * The posts are inserted with SQL, their lexicon computed by the server's own
 * function, so that filling 100k posts takes seconds, not an import
 * (`synthetic.ts`, shared with `vector.ts`).
 */
import { freshDatabase, percentile, startProcess } from "../support.ts"
import { loadDataset } from "./dataset.ts"
import { createBoard, synthetic, timeSuggestion } from "./synthetic.ts"

const sizes = (process.env["BENCH_SIZES"] ?? "1000,10000,100000").split(",").map(Number)
const concurrentSize = Number(process.env["BENCH_CONCURRENT_SIZE"] ?? 10_000)
const dataset = loadDataset(process.env["BENCH_DATASET"])
const { fill } = synthetic(dataset)

const database = await freshDatabase("speed")
const dbUrl = database.url
const server = await startProcess("main.js", { DATABASE_URL: dbUrl, RATE_LIMIT_MULTIPLIER: "1000000" })
const origin = server.origin

const suggest = (draft: { readonly title: string; readonly content: string }) => timeSuggestion(origin, draft)

try {
  await createBoard(dbUrl)
  console.log("| public posts on the board | sequential p50 | p95 | p99 | concurrent (50) req/s | concurrent p99 |")
  console.log("|---|---|---|---|---|---|")
  let filled = 0
  for (const size of sizes) {
    await fill(dbUrl, filled, size)
    filled = size
    for (const draft of dataset.drafts.slice(0, 20)) await suggest(draft) // warm-up
    const sequential: Array<number> = []
    for (let round = 0; round < 3; round++) for (const draft of dataset.drafts) sequential.push(await suggest(draft))
    sequential.sort((a, b) => a - b)
    let concurrent = "–"
    if (size === concurrentSize) {
      const latencies: Array<number> = []
      const until = performance.now() + 10_000
      const started = performance.now()
      await Promise.all(Array.from({ length: 50 }, async (_, c) => {
        for (let i = c; performance.now() < until; i += 50) latencies.push(await suggest(dataset.drafts[i % dataset.drafts.length]!))
      }))
      latencies.sort((a, b) => a - b)
      concurrent = `${(latencies.length / ((performance.now() - started) / 1000)).toFixed(0)} | ${percentile(latencies, 0.99).toFixed(1)} ms`
    } else {
      concurrent = "– | –"
    }
    const ms = (p: number) => `${percentile(sequential, p).toFixed(1)} ms`
    console.log(`| ${size.toLocaleString("en")} | ${ms(0.5)} | ${ms(0.95)} | ${ms(0.99)} | ${concurrent} |`)
  }
} finally {
  await server.stop()
  await database.drop()
}
