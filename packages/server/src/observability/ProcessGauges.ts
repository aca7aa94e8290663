import { Effect, Metric } from "effect"
import { readFileSync } from "node:fs"
import { constants, monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks"
import { labelled } from "./Metrics.js"

/**
 * The process's own numbers, read when Prometheus scrapes (issue 29), under
 * the names Prometheus client libraries use for Node: memory, event-loop
 * delay, time in garbage collection, the handles keeping the event loop
 * alive, and which build is running. With
 * `METRICS_PORT` only, like every gauge (`MetricsServer.ts`).
 */

const residentMemory = Metric.gauge("process_resident_memory_bytes", { description: "Resident set size of this process" })
const heapUsed = Metric.gauge("nodejs_heap_used_bytes", { description: "V8 heap in use" })
const heapTotal = Metric.gauge("nodejs_heap_total_bytes", { description: "V8 heap reserved" })
const externalMemory = Metric.gauge("nodejs_external_memory_bytes", { description: "Memory outside the V8 heap held by JavaScript objects (Buffers)" })
const eventLoopLag = (attributes: Record<string, string>) =>
  Metric.gauge("nodejs_eventloop_lag_seconds", {
    description: "Event-loop delay since the previous scrape: quantile 0.5 and 0.99, and the max (quantile 1)",
    attributes
  })
const gcSeconds = (attributes: Record<string, string>) =>
  Metric.counter("nodejs_gc_duration_seconds_total", {
    description: "Time spent in garbage collection since the process started, by kind",
    incremental: true,
    attributes
  })
const buildInfo = (attributes: Record<string, string>) =>
  Metric.gauge("hearken_build_info", { description: "1, labelled with this build's version, the commit it was built from, and the Node version running it", attributes })

const lagOf = labelled(eventLoopLag)
const gcOf = labelled(gcSeconds)

const gcKinds: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: "minor",
  [constants.NODE_PERFORMANCE_GC_MAJOR]: "major",
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: "incremental",
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: "weakcb"
}

const readJson = (path: string): Record<string, unknown> => {
  try {
    const parsed: unknown = JSON.parse(readFileSync(new URL(path, import.meta.url), "utf8"))
    return typeof parsed === "object" && parsed !== null ? parsed as Record<string, unknown> : {}
  } catch {
    return {}
  }
}

/**
 * The version and the commit this build came from, as `build-info.mjs` wrote
 * them to `dist/build-info.json`; else `package.json`'s version; `unknown`
 * for what cannot be read.
 */
const build = (): { readonly version: string; readonly commit: string } => {
  // Named from the package, so that the source (as the tests load it) reads the build's file too.
  const info = readJson("../../dist/build-info.json")
  const text = (value: unknown) => typeof value === "string" && value !== "" ? value : undefined
  return {
    version: text(info["version"]) ?? text(readJson("../../package.json")["version"]) ?? "unknown",
    commit: text(info["commit"]) ?? "unknown"
  }
}

/** Handles and requests keeping the event loop alive, by kind (`TCPSocketWrap`, `Timeout`, `FSReqCallback`, …). */
const activeResources = (attributes: Record<string, string>) =>
  Metric.gauge("nodejs_active_resources", {
    description: "Handles and requests keeping the event loop alive, by type",
    attributes
  })
const activeResourcesTotal = Metric.gauge("nodejs_active_resources_total", {
  description: "Handles and requests keeping the event loop alive"
})
const resourcesOf = labelled(activeResources)

/**
 * Starts watching the event loop and the collector for as long as the scope
 * lasts, and yields what sets the gauges on each scrape.
 */
export const make = Effect.gen(function*() {
  const delay = monitorEventLoopDelay({ resolution: 10 })
  delay.enable()
  /** Seconds of GC by kind since the previous scrape (the counters take what was added). */
  const pending = new Map<string, number>(Object.values(gcKinds).map((kind) => [kind, 0]))
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = gcKinds[(entry as { readonly detail?: { readonly kind?: number } }).detail?.kind ?? -1] ?? "other"
      pending.set(kind, (pending.get(kind) ?? 0) + entry.duration / 1000)
    }
  })
  observer.observe({ entryTypes: ["gc"] })
  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      observer.disconnect()
      delay.disable()
    })
  )
  const { commit, version } = build()
  yield* Metric.update(buildInfo({ version, commit, node: process.version }), 1)
  /** Every type seen so far: one that has gone reads 0 rather than its last count. */
  const resourceTypes = new Set<string>()
  for (const quantile of ["0.5", "0.99", "1"]) yield* Metric.update(lagOf({ quantile }), 0)

  return Effect.gen(function*() {
    const memory = process.memoryUsage()
    yield* Metric.update(residentMemory, memory.rss)
    yield* Metric.update(heapUsed, memory.heapUsed)
    yield* Metric.update(heapTotal, memory.heapTotal)
    yield* Metric.update(externalMemory, memory.external)
    // In nanoseconds. Scrapes closer together than the sampling (10 ms) find no sample: the last values stay.
    if (delay.count > 0) {
      yield* Metric.update(lagOf({ quantile: "0.5" }), delay.percentile(50) / 1e9)
      yield* Metric.update(lagOf({ quantile: "0.99" }), delay.percentile(99) / 1e9)
      yield* Metric.update(lagOf({ quantile: "1" }), delay.max / 1e9)
      delay.reset()
    }
    const resources = process.getActiveResourcesInfo()
    const counts = new Map<string, number>()
    for (const type of resources) counts.set(type, (counts.get(type) ?? 0) + 1)
    for (const type of counts.keys()) resourceTypes.add(type)
    for (const type of resourceTypes) yield* Metric.update(resourcesOf({ type }), counts.get(type) ?? 0)
    yield* Metric.update(activeResourcesTotal, resources.length)
    for (const [kind, added] of pending) {
      yield* Metric.update(gcOf({ kind }), added)
      pending.set(kind, 0)
    }
  })
})
