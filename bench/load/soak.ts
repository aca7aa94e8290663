/**
 * `--soak [SECONDS]`: Hearken alone under mixed load for SECONDS, its RSS
 * sampled every second. main.ts describes it.
 */
import { memory } from "../support.ts"
import {
  environment,
  feedbackTarget,
  getTarget,
  hammer,
  mean,
  n0,
  n1,
  n2,
  percentiles,
  sampleRss,
  type Settings,
  startServers,
  writeResults
} from "./common.ts"
import { half, makeData, organizations, seed } from "./data.ts"

export const soakMode = async (settings: Settings, url: string) => {
  const { postCount, updateCount, connections, soakSeconds: seconds } = settings
  const data = makeData()
  console.log(`seeding ${n0(postCount)} posts, ${n0(updateCount)} updates…`)
  await seed(data, url, half(postCount), half(updateCount))
  const [hearken] = await startServers(settings, url, false)
  try {
    const bodies = data.feedbackBodies(organizations)
    const reads = [...getTarget("boards", organizations).requests(), ...getTarget("updates", organizations).requests()]
    const [write] = feedbackTarget(bodies).requests()
    const requests = [reads[0]!, reads[2]!, write!, reads[1]!, reads[3]!, write!]
    console.log(`soak: ${seconds} s, ${connections} connections, GET /boards, GET /updates, POST /feedback in turn`)
    const sampler = sampleRss(hearken!.pid, 1_000)
    const latencies: Array<number> = []
    const result = await hammer(hearken!.origin, requests, connections, seconds, latencies)
    const samples = sampler.stop()
    const { p50Ms, p99Ms } = percentiles(latencies)
    const warm = Math.min(60, seconds / 5)
    const after = samples.filter((x) => x.s >= warm)
    const at = after[0] ?? samples[samples.length - 1]!
    const end = samples[samples.length - 1]!
    const max = Math.max(...samples.map((x) => x.mb))
    // Least squares over the samples after warm-up: MB per minute.
    const ms = mean(after.map((x) => x.s))
    const mm = mean(after.map((x) => x.mb))
    const slope = after.length < 2 ? 0 :
      60 * after.reduce((a, x) => a + (x.s - ms) * (x.mb - mm), 0) / after.reduce((a, x) => a + (x.s - ms) ** 2, 0)
    const { hwmMb } = memory(hearken!.pid)
    console.log("\n| soak | req/s | p50 | p99 | non-2xx + errors | RSS after warm-up | RSS at end | max RSS | VmHWM | slope after warm-up |")
    console.log("|---|---|---|---|---|---|---|---|---|---|")
    console.log(`| ${seconds} s (warm-up ${n0(warm)} s) | ${n0(result.requests.average)} | ${n1(p50Ms)} ms | ${n1(p99Ms)} ms | ` +
      `${result.non2xx + result.errors} | ${n0(at.mb)} MB | ${n0(end.mb)} MB | ${n0(max)} MB | ${n0(hwmMb)} MB | ${n2(slope)} MB/min |`)
    const step = Math.max(1, Math.floor(samples.length / 10))
    console.log(`\nRSS (MB) every ${step} s: ${samples.filter((_, i) => i % step === 0).map((x) => n0(x.mb)).join(" ")}`)
    writeResults(settings, {
      mode: "soak",
      ...environment(),
      config: { seconds, warmupSeconds: warm, connections, posts: postCount, updates: updateCount },
      requestsPerSecond: result.requests.average,
      p50Ms,
      p99Ms,
      non2xx: result.non2xx,
      errors: result.errors,
      rss: { afterWarmupMb: at.mb, endMb: end.mb, maxMb: max, hwmMb, slopeMbPerMinute: slope },
      samples
    })
  } finally {
    await hearken!.stop()
  }
}
