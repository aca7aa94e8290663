/**
 * `npm run quality`: how well `POST /suggestions` finds the duplicate, on the
 * labelled set in `dataset.json`, through the real HTTP endpoint of a server
 * process on real PostgreSQL. Reports recall@5, MRR@5 and hit@1 overall and
 * per kind, and the mean number of results for drafts that have no duplicate.
 *
 * `npm run quality -- --tune` ranks in process instead, without the
 * threshold, and reports the metrics for a range of thresholds on the drafts
 * with odd numbers (tuning) and even numbers (checking).
 *
 * BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres) is
 * an admin URL: a fresh database is created and dropped.
 */
import { ConfigProvider, Effect, Layer } from "effect"
import { mkdtemp, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Selection } from "../../packages/server/dist/suggestions/Suggestions.js"
import { freshDatabase, startProcess } from "../support.ts"
import { datasetOrganization, type Draft, loadDataset, qualityOrganizationId as organizationId } from "./dataset.ts"

const tune = process.argv.includes("--tune")
const dataset = loadDataset()

const fixture = { organizations: [datasetOrganization(dataset)] }

/** Per-draft outcome: the rank (1-based) of the first expected post in the answer, and the answer's length. */
interface Outcome {
  readonly draft: Draft
  readonly rank: number | undefined
  readonly found: number
  readonly results: number
}

const outcome = (draft: Draft, ids: ReadonlyArray<string>): Outcome => {
  const top = ids.slice(0, 5)
  const index = top.findIndex((id) => draft.expected.includes(id))
  return {
    draft,
    rank: index < 0 ? undefined : index + 1,
    found: draft.expected.filter((id) => top.includes(id)).length,
    results: top.length
  }
}

interface Metrics {
  readonly n: number
  readonly recall: number
  readonly mrr: number
  readonly hit1: number
}

const metrics = (outcomes: ReadonlyArray<Outcome>): Metrics => {
  const positives = outcomes.filter((o) => o.draft.expected.length > 0)
  const mean = (f: (o: Outcome) => number) => positives.length === 0 ? 0 : positives.reduce((s, o) => s + f(o), 0) / positives.length
  return {
    n: positives.length,
    recall: mean((o) => o.found / o.draft.expected.length),
    mrr: mean((o) => o.rank === undefined ? 0 : 1 / o.rank),
    hit1: mean((o) => o.rank === 1 ? 1 : 0)
  }
}

const negatives = (outcomes: ReadonlyArray<Outcome>) => {
  const list = outcomes.filter((o) => o.draft.expected.length === 0)
  return {
    n: list.length,
    meanResults: list.length === 0 ? 0 : list.reduce((s, o) => s + o.results, 0) / list.length,
    empty: list.filter((o) => o.results === 0).length
  }
}

const f2 = (x: number) => x.toFixed(2)

const report = (outcomes: ReadonlyArray<Outcome>) => {
  const rows: Array<string> = ["| kind | drafts | recall@5 | MRR@5 | hit@1 |", "|---|---|---|---|---|"]
  const all = metrics(outcomes)
  rows.push(`| **all positives** | ${all.n} | ${f2(all.recall)} | ${f2(all.mrr)} | ${f2(all.hit1)} |`)
  for (const kind of [...new Set(outcomes.map((o) => o.draft.kind))].filter((k) => k !== "negative")) {
    const m = metrics(outcomes.filter((o) => o.draft.kind === kind))
    rows.push(`| ${kind} | ${m.n} | ${f2(m.recall)} | ${f2(m.mrr)} | ${f2(m.hit1)} |`)
  }
  const neg = negatives(outcomes)
  rows.push("", `negatives: ${neg.n} drafts, ${f2(neg.meanResults)} results on average, ${neg.empty} answered []`)
  const noisy = outcomes.filter((o) => o.draft.expected.length === 0 && o.results > 0)
  if (noisy.length > 0) rows.push("answered something: " + noisy.map((o) => `${o.draft.id} (${o.results})`).join(", "))
  const misses = outcomes.filter((o) => o.draft.expected.length > 0 && o.rank !== 1)
  if (misses.length > 0) {
    rows.push("", "not first: " + misses.map((o) => `${o.draft.id} (${o.draft.kind}, ${o.rank ?? "missed"})`).join(", "))
  }
  console.log(rows.join("\n"))
}

const database = await freshDatabase("quality")
const dir = await mkdtemp(join(tmpdir(), "hearken-quality-"))
const seedFile = join(dir, "fixture.json")
await writeFile(seedFile, JSON.stringify(fixture))

try {
  if (tune) {
    // Imported here, so that the HTTP report also runs against a server without them (an older build).
    const { Core } = await import("../../packages/server/dist/App.js")
    const { ServerConfig } = await import("../../packages/server/dist/config.js")
    const { select, selection, Suggestions } = await import("../../packages/server/dist/suggestions/Suggestions.js")
    const env = { DATABASE_URL: database.url, SEED_FILE: seedFile, LOG_LEVEL: "warn" }
    const rankings = await Effect.runPromise(Effect.gen(function*() {
      const suggestions = yield* Suggestions
      return yield* Effect.forEach(dataset.drafts, (draft) =>
        suggestions.rank({ organizationId, boardId: draft.boardId, title: draft.title, content: draft.content }).pipe(
          Effect.map((ranked) => ({ draft, ranked }))
        ))
    }).pipe(
      Effect.provide(Core.pipe(Layer.provideMerge(ServerConfig.layer), Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env }))))),
      Effect.scoped
    ))
    const half = (parity: number) => rankings.filter(({ draft }) => Number(draft.id.replace(/\D/g, "")) % 2 === parity)
    const at = (list: typeof rankings, s: Selection) =>
      list.map(({ draft, ranked }) => outcome(draft, select(ranked, s).map((r) => r.match.id)))
    const [tuneSet, checkSet] = [half(1), half(0)]
    const grid: Array<Selection> = []
    for (const confident of [0.15, 0.175, 0.2, 0.225, 0.25, 0.3]) {
      for (const floor of [0.05, 0.06, 0.07, 0.08, 0.09, 0.1, 0.12]) {
        for (const standOut of [1.2, 1.3, 1.4, 1.5, 1.75, 2]) {
          for (const follow of [0.5, 0.6, 0.7, 0.8, 0.9]) grid.push({ confident, floor, standOut, follow })
        }
      }
    }
    // Best recall on the tuning half with at most one result per negative draft, then MRR.
    const scored = grid.map((s) => {
      const o = at(tuneSet, s)
      return { s, m: metrics(o), neg: negatives(o).meanResults }
    }).filter((x) => x.neg <= 1).sort((a, b) => b.m.recall - a.m.recall || b.m.mrr - a.m.mrr || a.neg - b.neg)
    console.log("| selection | tune recall@5 | tune MRR@5 | tune negatives | check recall@5 | check MRR@5 | check negatives |")
    console.log("|---|---|---|---|---|---|---|")
    for (const { s } of [{ s: selection }, ...scored.slice(0, 8)]) {
      const [a, b] = [at(tuneSet, s), at(checkSet, s)]
      const [ma, mb] = [metrics(a), metrics(b)]
      console.log(`| ${JSON.stringify(s)}${s === selection ? " (current)" : ""} | ${f2(ma.recall)} | ${f2(ma.mrr)} | ${f2(negatives(a).meanResults)} | ${f2(mb.recall)} | ${f2(mb.mrr)} | ${f2(negatives(b).meanResults)} |`)
    }
    const coverages = rankings.map(({ draft, ranked }) => {
      const hit = ranked.find((r) => draft.expected.includes(r.match.id))
      return `${draft.id} ${draft.kind}: ${hit ? `expected ${f2(hit.coverage)} at ${ranked.indexOf(hit) + 1}` : "expected not ranked"}; top ${ranked.slice(0, 4).map((r) => f2(r.coverage)).join(" ")}`
    })
    if (process.argv.includes("--verbose")) console.log(coverages.join("\n"))
  } else {
    const server = await startProcess("main.js", { DATABASE_URL: database.url, SEED_FILE: seedFile, RATE_LIMIT_MULTIPLIER: "100000" })
    try {
      const outcomes: Array<Outcome> = []
      for (const draft of dataset.drafts) {
        const res = await fetch(`${server.origin}/api/widget/v1/suggestions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ organizationId, boardId: draft.boardId, title: draft.title, content: draft.content })
        })
        if (res.status !== 200) throw new Error(`POST /suggestions answered ${res.status} for ${draft.id}`)
        outcomes.push(outcome(draft, ((await res.json()) as Array<{ id: string }>).map((m) => m.id)))
      }
      console.log(`${dataset.posts.length} posts on ${dataset.boards.length} boards, ${dataset.drafts.length} drafts, through POST /suggestions\n`)
      report(outcomes)
    } finally {
      await server.stop()
    }
  }
} finally {
  await database.drop()
}
