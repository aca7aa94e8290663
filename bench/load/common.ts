/**
 * What the bench's modes share: their settings, the servers as processes,
 * RSS sampling, autocannon runs and their summaries, and the output.
 */
import autocannon from "autocannon"
import { writeFileSync } from "node:fs"
import { cpus } from "node:os"
import { join } from "node:path"
import { memory, percentile, startProcess } from "../support.ts"
import { type CostMeter, type Costs, meanCosts } from "./costs.ts"
import type { Organization } from "./data.ts"

export type Mode = "load" | "growth" | "soak" | "observability"

/** A run's settings, from its flags and BENCH_* variables (main.ts). */
export interface Settings {
  readonly mode: Mode
  /** `--posts` and `--updates`: in all, over both organizations. */
  readonly postCount: number
  readonly updateCount: number
  /** `--growth-max`: the largest organization of `--growth`. */
  readonly growthMax: number
  /** `--soak`: how long, in seconds. */
  readonly soakSeconds: number
  readonly rounds: number
  readonly connections: number
  readonly duration: number
  readonly warmup: number
  readonly redisUrl: string
  readonly resultsPath: string
}

export const rateLimitMultiplier = "100000"

export const api = "/api/widget/v1"

// ---------------------------------------------------------------- processes, RSS, load

export type Server = Awaited<ReturnType<typeof startProcess>> & { readonly name: string }

/** What every server of the bench runs with: the database, Redis, limits raised, warnings only. */
export const serverEnv = (settings: Settings, url: string) => ({
  DATABASE_URL: url,
  REDIS_URL: settings.redisUrl,
  RATE_LIMIT_MULTIPLIER: rateLimitMultiplier,
  LOG_LEVEL: "warn"
})

export const startServers = async (settings: Settings, url: string, withBaseline = true) => {
  const env = serverEnv(settings, url)
  const servers: Array<Server> = [{ name: "Hearken", ...(await startProcess("main.js", env)) }]
  if (withBaseline) servers.push({ name: "baseline", ...(await startProcess(join(import.meta.dirname, "..", "baseline.ts"), env)) })
  return servers
}

/** Reads `pid`'s VmRSS every `everyMs` until `stop`, which yields the samples (seconds since start, MB). */
export const sampleRss = (pid: number, everyMs: number) => {
  const started = performance.now()
  const samples: Array<{ readonly s: number; readonly mb: number }> = []
  const take = () => samples.push({ s: (performance.now() - started) / 1000, mb: memory(pid).rssMb })
  take()
  const timer = setInterval(take, everyMs)
  return {
    stop: () => {
      clearInterval(timer)
      take()
      return samples
    }
  }
}

export interface Target {
  readonly name: string
  readonly kind: "read" | "write"
  /** An endpoint the baseline does not implement: Hearken alone is measured. */
  readonly hearkenOnly?: boolean
  readonly requests: () => Array<autocannon.Request>
}

export const getTarget = (endpoint: "boards" | "updates", orgs: ReadonlyArray<Organization>): Target => ({
  name: `GET /${endpoint}`,
  kind: "read",
  requests: () => orgs.map((org) => ({ method: "GET" as const, path: `${api}/${endpoint}?organizationId=${org.id}` }))
})

/** POSTs of `bodies`, in turn. */
const postTarget = (endpoint: "feedback" | "suggestions", kind: Target["kind"], bodies: ReadonlyArray<string>) => {
  let next = 0
  return {
    name: `POST /${endpoint}`,
    kind,
    requests: () => [{
      method: "POST" as const,
      path: `${api}/${endpoint}`,
      headers: { "content-type": "application/json" },
      setupRequest: (request: autocannon.Request) => ({ ...request, body: bodies[next++ % bodies.length]! })
    }]
  }
}

export const feedbackTarget = (bodies: ReadonlyArray<string>): Target => postTarget("feedback", "write", bodies)

/** Drafts as the widget sends them while a visitor types: a read that PostgreSQL answers every time (no cache). */
export const suggestionsTarget = (bodies: ReadonlyArray<string>): Target => ({
  ...postTarget("suggestions", "read", bodies),
  hearkenOnly: true
})

/**
 * autocannon at `connections` for `seconds`; the latency of every 2xx answer
 * goes to `latencies` in ms (autocannon's own histogram keeps whole ms only).
 */
export const hammer = (
  origin: string,
  requests: Array<autocannon.Request>,
  connections: number,
  seconds: number,
  latencies?: Array<number>
) =>
  new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      { url: origin, connections, duration: seconds, requests, timeout: 10 },
      (error: unknown, result) => (error ? reject(error) : resolve(result))
    )
    if (latencies) instance.on("response", (_client, status, _bytes, ms) => status < 300 && status >= 200 && latencies.push(ms))
  })

/** p50 and p99 of `latencies` (sorts it). */
export const percentiles = (latencies: Array<number>) => {
  latencies.sort((a, b) => a - b)
  return latencies.length === 0 ? { p50Ms: NaN, p99Ms: NaN } : { p50Ms: percentile(latencies, 0.5), p99Ms: percentile(latencies, 0.99) }
}

export interface Round {
  readonly requestsPerSecond: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly requests: number
  readonly non2xx: number
  readonly errors: number
  readonly bytesPerSecond: number
  readonly peakRssMb: number
  /** What a request cost, with a meter (costs.ts). */
  readonly costs?: Costs
}

/** One round: a warm-up, then BENCH_DURATION seconds measured, RSS every 250 ms, and the costs with a meter. */
export const measure = async (settings: Settings, server: Server, target: Target, meter?: CostMeter): Promise<Round> => {
  await hammer(server.origin, target.requests(), settings.connections, settings.warmup)
  const before = await meter?.snapshot(server.pid)
  const sampler = sampleRss(server.pid, 250)
  const latencies: Array<number> = []
  const result = await hammer(server.origin, target.requests(), settings.connections, settings.duration, latencies)
  const samples = sampler.stop()
  const after = await meter?.snapshot(server.pid)
  const costs = meter && before && after ? await meter.perRequest(before, after, result.requests.total) : undefined
  return {
    ...(costs ? { costs } : {}),
    requestsPerSecond: result.requests.average,
    ...percentiles(latencies),
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    bytesPerSecond: result.throughput.average,
    peakRssMb: Math.max(...samples.map((x) => x.mb))
  }
}

export const mean = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => a + b, 0) / xs.length
export const summarize = (runs: ReadonlyArray<Round>) => ({
  requestsPerSecond: mean(runs.map((r) => r.requestsPerSecond)),
  p50Ms: mean(runs.map((r) => r.p50Ms)),
  p99Ms: mean(runs.map((r) => r.p99Ms)),
  non2xx: runs.reduce((a, r) => a + r.non2xx, 0),
  errors: runs.reduce((a, r) => a + r.errors, 0),
  peakRssMb: Math.max(...runs.map((r) => r.peakRssMb)),
  ...(runs.every((r) => r.costs) ? { costs: meanCosts(runs.map((r) => r.costs!)) } : {}),
  rounds: runs
})

// ---------------------------------------------------------------- output helpers

export const n0 = (x: number) => Math.round(x).toLocaleString("en")
export const n1 = (x: number) => x.toFixed(1)
/** Latency: two decimals below 10 ms. */
export const ms = (x: number) => x.toFixed(x < 10 ? 2 : 1)
export const n2 = (x: number) => x.toFixed(2)
export const mark = (met: boolean) => (met ? "met" : "missed")

export const writeResults = (settings: Settings, results: unknown) => {
  writeFileSync(settings.resultsPath, `${JSON.stringify(results, null, 2)}\n`)
  console.log(`\nresults: ${settings.resultsPath}`)
}

export const environment = () => ({ date: new Date().toISOString(), node: process.version, cpus: cpus().length })
