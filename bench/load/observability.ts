/**
 * `--observability`: what the Prometheus metrics cost, metrics on against
 * off on GET /boards, alternately. main.ts describes it.
 */
import { freePort } from "../../test/support/net.ts"
import { startProcess } from "../support.ts"
import {
  environment,
  getTarget,
  measure,
  ms,
  n0,
  n2,
  type Round,
  type Server,
  serverEnv,
  type Settings,
  summarize,
  writeResults
} from "./common.ts"
import { half, makeData, organizations, seed } from "./data.ts"

export const observabilityMode = async (settings: Settings, url: string) => {
  const { postCount, updateCount, rounds, duration, warmup, connections } = settings
  const data = makeData()
  console.log(`seeding ${n0(postCount)} posts, ${n0(updateCount)} updates…`)
  await seed(data, url, half(postCount), half(updateCount))
  const env = serverEnv(settings, url)
  const metricsPort = await freePort()
  const servers: Array<Server> = [
    { name: "off", ...(await startProcess("main.js", env)) },
    { name: "metrics", ...(await startProcess("main.js", { ...env, METRICS_PORT: String(metricsPort) })) }
  ]
  try {
    const target = getTarget("boards", organizations)
    const runs: Record<string, Array<Round>> = { off: [], metrics: [] }
    let scrapes = 0
    console.log(`${rounds} round(s) of ${duration} s after ${warmup} s warm-ups, ${connections} connections, off then metrics`)
    for (let round = 0; round < rounds; round++) {
      for (const server of servers) {
        const scraper = server.name === "metrics"
          ? setInterval(() => void fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((r) => r.text()).then(() => scrapes++), 1_000)
          : undefined
        const run = await measure(settings, server, target).finally(() => clearInterval(scraper))
        runs[server.name]!.push(run)
        console.log(`  ${target.name} ${server.name} round ${round + 1}: ${n0(run.requestsPerSecond)} req/s, p50 ${ms(run.p50Ms)} ms, ` +
          `p99 ${ms(run.p99Ms)} ms, ${run.non2xx} non-2xx, ${run.errors} errors`)
      }
    }
    const off = summarize(runs["off"]!)
    const on = summarize(runs["metrics"]!)
    const ratios = { requestsPerSecond: on.requestsPerSecond / off.requestsPerSecond, p50: on.p50Ms / off.p50Ms, p99: on.p99Ms / off.p99Ms }
    console.log("\n| GET /boards | req/s | p50 (ms) | p99 (ms) | non-2xx + errors |")
    console.log("|---|---|---|---|---|")
    for (const [name, r] of [["metrics off", off], ["METRICS_PORT set", on]] as const) {
      console.log(`| ${name} | ${n0(r.requestsPerSecond)} | ${ms(r.p50Ms)} | ${ms(r.p99Ms)} | ${r.non2xx + r.errors} |`)
    }
    console.log(`| on / off | ${n2(ratios.requestsPerSecond)} | ${n2(ratios.p50)} | ${n2(ratios.p99)} | |`)
    console.log(`${scrapes} scrapes during the metrics runs`)
    writeResults(settings, {
      mode: "observability",
      ...environment(),
      config: { posts: postCount, updates: updateCount, rounds, durationSeconds: duration, warmupSeconds: warmup, connections },
      endpoint: target.name,
      off,
      metrics: on,
      ratios,
      scrapes
    })
  } finally {
    for (const server of servers) await server.stop()
  }
}
