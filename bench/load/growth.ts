/**
 * `--growth`: how time and bytes grow with the organization, sequential
 * requests (no load), both servers. main.ts describes it.
 */
import { percentile, withSql } from "../support.ts"
import { api, environment, ms, n0, n1, type Server, type Settings, startServers, writeResults } from "./common.ts"
import { commonTitles, fillPosts, fillUpdates, makeData, maxTemplates, organizations, seedOrganizations, storeTemplates } from "./data.ts"

/** Sequential requests: p50 in ms and the last answer's size in bytes. */
const sequential = async (count: number, budgetMs: number, request: () => Promise<Response>) => {
  const times: Array<number> = []
  let bytes = 0
  const until = performance.now() + budgetMs
  for (let i = 0; i < count && (i < 3 || performance.now() < until); i++) {
    const started = performance.now()
    const res = await request()
    const body = await res.arrayBuffer()
    times.push(performance.now() - started)
    if (res.status !== 200) throw new Error(`answered ${res.status}: ${Buffer.from(body).toString("utf8").slice(0, 300)}`)
    bytes = body.byteLength
  }
  times.sort((a, b) => a - b)
  return { p50Ms: percentile(times, 0.5), requests: times.length, bytes }
}

export const growthMode = async (settings: Settings, url: string) => {
  const { growthMax } = settings
  const data = makeData()
  const postSizes = [10_000, 100_000, 1_000_000].filter((n) => n < growthMax)
  postSizes.push(growthMax)
  const updateSizes = [10, 1_000, 10_000]
  const [postsOrg, updatesOrg] = organizations
  console.log("seeding the organizations…")
  await seedOrganizations(url)
  const templates = data.postTemplates(Math.min(maxTemplates, growthMax))
  await storeTemplates(url, postsOrg, templates)
  const servers = await startServers(settings, url)
  const both = async <A>(f: (server: Server) => Promise<A>) => ({ hearken: await f(servers[0]!), baseline: await f(servers[1]!) })
  try {
    const updates = []
    let filled = 0
    for (const size of updateSizes) {
      const fillStarted = performance.now()
      await fillUpdates(url, data.updateTemplates, updatesOrg, filled, size, false)
      const fillSeconds = (performance.now() - fillStarted) / 1000
      filled = size
      const get = (server: Server) => () => fetch(`${server.origin}${api}/updates?organizationId=${updatesOrg.id}`)
      const results = await both(async (server) => ({
        // The first answer after the write misses the answer cache; the next ones may not.
        first: await sequential(1, 0, get(server)),
        then: await sequential(20, 5_000, get(server))
      }))
      updates.push({ publishedEntries: size, fillSeconds, ...results })
      console.log(`  /updates ${n0(size)} entries (filled in ${n1(fillSeconds)} s): Hearken first ${ms(results.hearken.first.p50Ms)} ms, ` +
        `then p50 ${ms(results.hearken.then.p50Ms)} ms; baseline first ${ms(results.baseline.first.p50Ms)} ms, ` +
        `then ${ms(results.baseline.then.p50Ms)} ms; ${n0(results.hearken.then.bytes)} bytes`)
    }
    const feedback = []
    // One post per common title starts its slug counter (a scan of the organization's numbered slugs),
    // then 30 posts with those titles measure the steady cost.
    const starters = data.feedbackBodies([postsOrg], commonTitles.length, (i) => commonTitles[i]!)
    const bodies = data.feedbackBodies([postsOrg], 500, () => data.zipfCommon())
    filled = 0
    for (const size of postSizes) {
      const fillStarted = performance.now()
      await fillPosts(url, postsOrg, templates.length, filled, size)
      const fillSeconds = (performance.now() - fillStarted) / 1000
      filled = size
      const [table] = await withSql(url, (sql) =>
        sql<{ bytes: string; posts: string }>`SELECT pg_total_relation_size('posts')::text AS bytes,
          (SELECT count(*) FROM posts WHERE organization_id = ${postsOrg.id})::text AS posts`
      )
      const post = (server: Server, list: ReadonlyArray<string>) => {
        let i = 0
        return () =>
          fetch(`${server.origin}${api}/feedback`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: list[i++ % list.length]!
          })
      }
      // Each server starts the counters itself: they are shared, through the database.
      const restartCounters = () => withSql(url, (sql) => sql`DELETE FROM slug_counters WHERE organization_id = ${postsOrg.id}`)
      const results = await both(async (server) => ({
        first: await restartCounters().then(() => sequential(starters.length, 600_000, post(server, starters))),
        then: await sequential(30, 30_000, post(server, bodies))
      }))
      feedback.push({ posts: Number(table!.posts), fillSeconds, tableBytes: Number(table!.bytes), ...results })
      console.log(`  /feedback ${n0(Number(table!.posts))} posts (filled in ${n1(fillSeconds)} s): Hearken first per title ` +
        `${ms(results.hearken.first.p50Ms)} ms, then p50 ${ms(results.hearken.then.p50Ms)} ms; baseline ` +
        `${ms(results.baseline.first.p50Ms)} ms, then ${ms(results.baseline.then.p50Ms)} ms`)
    }

    const grow = (x: number, first: number) => `×${(x / first).toFixed(1)}`
    console.log("\nGET /updates, sequential, by published entries in the organization (first: the answer right after the write)\n")
    console.log("| published entries | Hearken first | Hearken then (p50) | baseline first | baseline then (p50) | answer bytes |")
    console.log("|---|---|---|---|---|---|")
    for (const u of updates) {
      const [h, b, first] = [u.hearken, u.baseline, updates[0]!.hearken]
      console.log(`| ${n0(u.publishedEntries)} | ${ms(h.first.p50Ms)} ms | ${ms(h.then.p50Ms)} ms (${grow(h.then.p50Ms, first.then.p50Ms)}) | ` +
        `${ms(b.first.p50Ms)} ms | ${ms(b.then.p50Ms)} ms | ${n0(h.then.bytes)} (${grow(h.then.bytes, first.then.bytes)}) |`)
    }
    console.log("\nPOST /feedback, sequential, by posts in the organization (first: one post per common title after the import)\n")
    console.log("| posts | Hearken first per title (p50) | Hearken then (p50) | baseline first per title | baseline then | posts table + indexes |")
    console.log("|---|---|---|---|---|---|")
    for (const f of feedback) {
      const [h, b, first] = [f.hearken, f.baseline, feedback[0]!.hearken]
      console.log(`| ${n0(f.posts)} | ${ms(h.first.p50Ms)} ms (${grow(h.first.p50Ms, first.first.p50Ms)}) | ` +
        `${ms(h.then.p50Ms)} ms (${grow(h.then.p50Ms, first.then.p50Ms)}) | ${ms(b.first.p50Ms)} ms | ${ms(b.then.p50Ms)} ms | ` +
        `${n0(f.tableBytes / 1024 / 1024)} MB |`)
    }
    writeResults(settings, { mode: "growth", ...environment(), config: { growthMax }, updates, feedback })
  } finally {
    for (const server of servers) await server.stop()
  }
}
