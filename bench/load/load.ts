/**
 * Load mode (the default, and `--smoke`): Hearken and the baseline on the
 * same data, loaded alternately on GET /boards, GET /updates and POST
 * /feedback; the gzip sizes of the browser bundles first. main.ts describes it.
 */
import { deepStrictEqual } from "node:assert/strict"
import { bundleSizes } from "../../test/support/sizes.ts"
import { printBundleSizes } from "../sizes.ts"
import { memory, withSql } from "../support.ts"
import {
  api,
  environment,
  feedbackTarget,
  getTarget,
  mark,
  measure,
  ms,
  n0,
  n1,
  n2,
  rateLimitMultiplier,
  type Round,
  type Server,
  type Settings,
  startServers,
  suggestionsTarget,
  summarize,
  type Target,
  writeResults
} from "./common.ts"
import { costMeter, type Costs } from "./costs.ts"
import { half, makeData, organizations, seed } from "./data.ts"

/** Decision 0011's targets: reported, not enforced. */
export const targets = { readRatio: 0.8, writeRatio: 0.5, p99Ratio: 2, rssMb: 250 }

const getJson = async (origin: string, path: string) => {
  const res = await fetch(origin + path)
  if (res.status !== 200) throw new Error(`GET ${path} on ${origin} answered ${res.status}: ${await res.text()}`)
  return { etag: res.headers.get("etag"), body: await res.json() as unknown }
}

/** Both servers answer the same and store the same post: the baseline does the server's work, no less. */
const checkSameWork = async (url: string, [hearken, baseline]: ReadonlyArray<Server>, body: string) => {
  for (const org of organizations) {
    for (const endpoint of ["boards", "updates"]) {
      const path = `${api}/${endpoint}?organizationId=${org.id}`
      const [h, b] = [await getJson(hearken!.origin, path), await getJson(baseline!.origin, path)]
      deepStrictEqual(b.body, h.body, `GET ${path} differs`)
      deepStrictEqual(b.etag, h.etag, `GET ${path}: the ETags differ`)
    }
  }
  const created: Array<Record<string, string>> = []
  for (const server of [hearken!, baseline!]) {
    const res = await fetch(`${server.origin}${api}/feedback`, { method: "POST", headers: { "content-type": "application/json" }, body })
    if (res.status !== 200) throw new Error(`POST /feedback on ${server.name} answered ${res.status}: ${await res.text()}`)
    created.push(await res.json() as Record<string, string>)
  }
  deepStrictEqual(Object.keys(created[1]!).sort(), Object.keys(created[0]!).sort(), "POST /feedback answers differ in shape")
  const stored = await withSql(url, (sql) =>
    sql`SELECT id, title, content, excerpt, visibility, status_id, metadata, source, contact_id,
          lexicon::text, title_lexicon::text, text_hash
        FROM posts WHERE id IN (${created[0]!["id"]!}, ${created[1]!["id"]!})`
  )
  const [a, b] = created.map((c) => {
    const { id: _, ...row } = stored.find((r) => r["id"] === c["id"])!
    return row
  })
  deepStrictEqual(b, a, "the posts the two servers stored differ")
}

/** What a request cost (costs.ts): docs/operations.md, "Scale-out on paper", derives its sizes from this table. */
const printCosts = (rows: ReadonlyArray<{ readonly name: string; readonly costs: Costs | undefined }>) => {
  console.log("\nPer request (CPU in ms; PostgreSQL's counts from pg_stat_database, WAL in bytes):\n")
  console.log("| endpoint | server CPU | PostgreSQL CPU | Redis CPU | transactions | buffers (read from OS) | rows read / written | WAL bytes |")
  console.log("|---|---|---|---|---|---|---|---|")
  for (const { costs: c, name } of rows) {
    if (!c) continue
    console.log(`| ${name} | ${n3(c.serverCpuMs)} | ${n3(c.postgresCpuMs)} | ${n3(c.redisCpuMs)} | ${n2(c.transactions)} | ` +
      `${n1(c.blocks)} (${n2(c.blocksRead)}) | ${n1(c.rowsRead)} / ${n2(c.rowsWritten)} | ${n0(c.walBytes)} |`)
  }
}

const n3 = (x: number) => x.toFixed(3)

export const loadMode = async (settings: Settings, url: string) => {
  const { postCount, updateCount, rounds, duration, warmup, connections } = settings
  const data = makeData()
  // What a browser downloads: the thin client alone and the whole widget, gzip.
  const bundles = await bundleSizes()
  printBundleSizes(bundles)
  console.log(`seeding ${n0(postCount)} posts, ${n0(updateCount)} updates…`)
  const seeded = await seed(data, url, half(postCount), half(updateCount))
  console.log(`seeded in ${n1(seeded.seconds)} s`)
  const servers = await startServers(settings, url)
  try {
    const bodies = data.feedbackBodies(organizations)
    const drafts = data.suggestionBodies(organizations)
    await checkSameWork(url, servers, bodies[0]!)
    const meter = await costMeter(url, settings.redisUrl)
    const [hearkenIdle, baselineIdle] = servers.map((s) => memory(s.pid).rssMb)
    const endpoints: Array<Target> = [
      getTarget("boards", organizations),
      getTarget("updates", organizations),
      feedbackTarget(bodies),
      suggestionsTarget(drafts)
    ]
    console.log(`${rounds} round(s) of ${duration} s after ${warmup} s warm-ups, ${connections} connections, Hearken then baseline`)
    const measured = []
    const hearkenOnly: Array<{ endpoint: string; kind: Target["kind"]; hearken: ReturnType<typeof summarize> }> = []
    for (const target of endpoints) {
      const runs: Record<string, Array<Round>> = { Hearken: [], baseline: [] }
      for (let round = 0; round < rounds; round++) {
        for (const server of servers) {
          if (target.hearkenOnly && server.name !== "Hearken") continue
          const run = await measure(settings, server, target, meter)
          runs[server.name]!.push(run)
          console.log(`  ${target.name} ${server.name} round ${round + 1}: ${n0(run.requestsPerSecond)} req/s, p50 ${ms(run.p50Ms)} ms, ` +
            `p99 ${ms(run.p99Ms)} ms, ${run.non2xx} non-2xx, ${run.errors} errors, RSS ${n0(run.peakRssMb)} MB`)
        }
      }
      const hearken = summarize(runs["Hearken"]!)
      if (target.hearkenOnly) {
        hearkenOnly.push({ endpoint: target.name, kind: target.kind, hearken })
        continue
      }
      const baseline = summarize(runs["baseline"]!)
      measured.push({
        endpoint: target.name,
        kind: target.kind,
        hearken,
        baseline,
        ratios: { requestsPerSecond: hearken.requestsPerSecond / baseline.requestsPerSecond, p99: hearken.p99Ms / baseline.p99Ms }
      })
    }
    const [hearkenMemory, baselineMemory] = servers.map((s) => memory(s.pid))
    const peak = Math.max(...[...measured, ...hearkenOnly].map((m) => m.hearken.peakRssMb))
    const checks = [
      ...measured.map((m) => {
        const target = m.kind === "read" ? targets.readRatio : targets.writeRatio
        return { name: `${m.endpoint} req/s ≥ ${target}× baseline`, value: m.ratios.requestsPerSecond, met: m.ratios.requestsPerSecond >= target }
      }),
      ...measured.map((m) => ({ name: `${m.endpoint} p99 ≤ ${targets.p99Ratio}× baseline`, value: m.ratios.p99, met: m.ratios.p99 <= targets.p99Ratio })),
      { name: `Hearken peak RSS under load ≤ ${targets.rssMb} MB`, value: peak, met: peak <= targets.rssMb }
    ]

    console.log(`\n${postCount.toLocaleString("en")} posts, ${updateCount} updates; ${rounds} round(s) × ${duration} s, ${connections} connections; H = Hearken, B = baseline\n`)
    console.log("| endpoint | Hearken req/s | baseline req/s | req/s ratio | p50 H / B (ms) | p99 H / B (ms) | p99 ratio | non-2xx + errors H / B | peak RSS H / B (MB) |")
    console.log("|---|---|---|---|---|---|---|---|---|")
    for (const m of measured) {
      const target = m.kind === "read" ? targets.readRatio : targets.writeRatio
      console.log(`| ${m.endpoint} | ${n0(m.hearken.requestsPerSecond)} | ${n0(m.baseline.requestsPerSecond)} | ` +
        `${n2(m.ratios.requestsPerSecond)} (≥ ${target}: ${mark(m.ratios.requestsPerSecond >= target)}) | ` +
        `${ms(m.hearken.p50Ms)} / ${ms(m.baseline.p50Ms)} | ${ms(m.hearken.p99Ms)} / ${ms(m.baseline.p99Ms)} | ` +
        `${n2(m.ratios.p99)} (≤ ${targets.p99Ratio}: ${mark(m.ratios.p99 <= targets.p99Ratio)}) | ` +
        `${m.hearken.non2xx + m.hearken.errors} / ${m.baseline.non2xx + m.baseline.errors} | ` +
        `${n0(m.hearken.peakRssMb)} / ${n0(m.baseline.peakRssMb)} |`)
    }
    for (const m of hearkenOnly) {
      console.log(`| ${m.endpoint} | ${n0(m.hearken.requestsPerSecond)} | – | – | ${ms(m.hearken.p50Ms)} / – | ${ms(m.hearken.p99Ms)} / – | – | ` +
        `${m.hearken.non2xx + m.hearken.errors} / – | ${n0(m.hearken.peakRssMb)} / – |`)
    }
    printCosts([
      ...measured.flatMap((m) => [{ name: `${m.endpoint} Hearken`, costs: m.hearken.costs }, { name: `${m.endpoint} baseline`, costs: m.baseline.costs }]),
      ...hearkenOnly.map((m) => ({ name: `${m.endpoint} Hearken`, costs: m.hearken.costs }))
    ])
    console.log(`\nHearken peak RSS under load ${n0(peak)} MB (≤ ${targets.rssMb}: ${mark(peak <= targets.rssMb)}); ` +
      `RSS before load Hearken ${n0(hearkenIdle!)} MB, baseline ${n0(baselineIdle!)} MB; ` +
      `VmHWM Hearken ${n0(hearkenMemory!.hwmMb)} MB, baseline ${n0(baselineMemory!.hwmMb)} MB`)
    console.log(`targets met: ${checks.filter((c) => c.met).length} of ${checks.length}`)

    writeResults(settings, {
      mode: "load",
      ...environment(),
      config: { posts: postCount, updates: updateCount, rounds, durationSeconds: duration, warmupSeconds: warmup, connections, rateLimitMultiplier },
      seedSeconds: seeded.seconds,
      bundles,
      endpoints: measured,
      hearkenOnly,
      memory: {
        hearken: { rssBeforeLoadMb: hearkenIdle, peakRssUnderLoadMb: peak, hwmMb: hearkenMemory!.hwmMb },
        baseline: { rssBeforeLoadMb: baselineIdle, hwmMb: baselineMemory!.hwmMb }
      },
      targets: checks
    })
  } finally {
    for (const server of servers) await server.stop()
  }
}
