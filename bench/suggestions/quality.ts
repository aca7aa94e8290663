/**
 * `npm run quality`: how well `POST /suggestions` finds the duplicate, on the
 * labelled set in `dataset.json`, through the real HTTP endpoint of a server
 * process on real PostgreSQL. Reports recall@5, MRR@5 and hit@1 overall and
 * per kind, and the mean number of results for drafts that have no duplicate.
 *
 * Then the semantic path (decision 0009), with the fake concept embedder of
 * the tests (`test/support/embeddings.ts`, 64 dimensions), which stands in
 * for a real model: a second server process on the same database embeds the
 * posts, and the report compares recall@5 and MRR@5 of the lexical answer
 * alone, the vector answer alone (nearest within the distance), and the
 * merged answer the API gives, at several maximum distances. The merged
 * answer is checked against the API's at QUALITY_MAX_DISTANCE (default 0.5).
 *
 * `npm run quality -- --tune` ranks in process instead, without the
 * threshold, and reports the metrics for a range of thresholds on the drafts
 * with odd numbers (tuning) and even numbers (checking).
 *
 * BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres) is
 * an admin URL: a fresh database is created and dropped.
 */
import { ConfigProvider, Effect, Layer, Option } from "effect"
import { mkdtemp, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Selection } from "../../packages/server/dist/suggestions/Suggestions.js"
import { startFakeEmbeddings } from "../../test/support/embeddings.ts"
import { freshDatabase, startProcess, withSql } from "../support.ts"
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

/** The maximum distance the API runs with in the semantic report; the report also shows others. */
const maxDistance = Number(process.env["QUALITY_MAX_DISTANCE"] ?? 0.5)
const distances = [...new Set([0.4, 0.45, 0.5, 0.55, 0.6, maxDistance])].sort()

const summary = (label: string, outcomes: ReadonlyArray<Outcome>) => {
  const all = metrics(outcomes)
  const para = metrics(outcomes.filter((o) => o.draft.kind === "paraphrase"))
  const neg = negatives(outcomes)
  return `| ${label} | ${f2(all.recall)} | ${f2(all.mrr)} | ${f2(all.hit1)} | ${f2(para.recall)} / ${f2(para.mrr)} | ${f2(neg.meanResults)} |`
}

/** In-process services of the server (dist), on `env`: for the answers the API does not give alone. */
const inProcess = async <A>(env: Record<string, string>, f: (services: {
  readonly suggestions: import("../../packages/server/dist/suggestions/Suggestions.js").Suggestions["Service"]
  readonly embeddings: import("../../packages/server/dist/embeddings/Embeddings.js").Embeddings["Service"]
  readonly repo: import("../../packages/server/dist/embeddings/EmbeddingRepo.js").EmbeddingRepo["Service"]
  readonly text: (html: string) => string
}) => Effect.Effect<A>) => {
  const { Core } = await import("../../packages/server/dist/App.js")
  const { ServerConfig } = await import("../../packages/server/dist/config.js")
  const { Suggestions } = await import("../../packages/server/dist/suggestions/Suggestions.js")
  const { Embeddings } = await import("../../packages/server/dist/embeddings/Embeddings.js")
  const { EmbeddingRepo } = await import("../../packages/server/dist/embeddings/EmbeddingRepo.js")
  const { Sanitizer } = await import("../../packages/server/dist/content/Sanitizer.js")
  return Effect.runPromise(Effect.gen(function*() {
    const sanitizer = yield* Sanitizer
    return yield* f({ suggestions: yield* Suggestions, embeddings: yield* Embeddings, repo: yield* EmbeddingRepo, text: sanitizer.text })
  }).pipe(
    Effect.provide(Core.pipe(Layer.provideMerge(ServerConfig.layer), Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env }))))),
    Effect.scoped
  ))
}

/**
 * The semantic path with the fake concept embedder: a server process that
 * embeds the posts, then per draft the lexical answer, the nearest posts with
 * their distances (in process, through the server's own services), and the
 * API's merged answer.
 */
const semanticReport = async (databaseUrl: string) => {
  const { fuse } = await import("../../packages/server/dist/suggestions/fuse.js")
  const { embeddingInput } = await import("../../packages/server/dist/embeddings/Embeddings.js")
  const { normalizeDraft } = await import("../../packages/server/dist/suggestions/Semantic.js")
  const fake = await startFakeEmbeddings({ dimensions: 64 })
  const env = {
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: "warn",
    EMBEDDINGS_URL: fake.url,
    EMBEDDINGS_MODEL: "fake-concepts",
    EMBEDDINGS_DIMENSIONS: "64",
    SUGGESTIONS_MAX_DISTANCE: String(maxDistance)
  }
  const server = await startProcess("main.js", { ...env, RATE_LIMIT_MULTIPLIER: "100000" })
  try {
    const started = performance.now()
    for (;;) {
      const [row] = await withSql(databaseUrl, (sql) =>
        sql<{ waiting: number }>`SELECT count(*)::int AS waiting FROM posts p
          LEFT JOIN post_embeddings e ON e.post_id = p.id AND e.model = 'fake-concepts' AND e.embedding IS NOT NULL
          WHERE p.visibility = 'public' AND e.post_id IS NULL`)
      if (row!.waiting === 0) break
      if (performance.now() - started > 120_000) throw new Error(`${row!.waiting} posts still not embedded after 2 minutes`)
      await new Promise((r) => setTimeout(r, 200))
    }
    const embeddedIn = ((performance.now() - started) / 1000).toFixed(1)
    const answers = await inProcess(env, ({ embeddings, repo, suggestions, text }) =>
      Effect.forEach(dataset.drafts, (draft) =>
        Effect.gen(function*() {
          const request = { organizationId, boardId: draft.boardId, title: draft.title, content: draft.content }
          const lexical = (yield* suggestions.lexical(request)).map((m) => ({ id: m.id }))
          const [vector] = yield* Effect.orDie(embeddings.embed([embeddingInput(normalizeDraft(draft.title), normalizeDraft(text(draft.content)))]))
          const near = yield* Effect.orDie(repo.nearest(Option.getOrThrow(embeddings.model), { ...request, vector: vector!, limit: 5 }))
          const api = yield* Effect.promise(() =>
            fetch(`${server.origin}/api/widget/v1/suggestions`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify(request)
            }).then((res) => res.json() as Promise<Array<{ id: string }>>)
          )
          return { draft, lexical, near, api: api.map((m) => m.id) }
        })))

    const within = (near: ReadonlyArray<{ id: string; distance: number }>, d: number) => near.filter((n) => n.distance <= d).map((n) => ({ id: n.id }))
    const merged = (a: (typeof answers)[number], d: number) => {
      const vector = within(a.near, d)
      return (vector.length === 0 ? a.lexical : fuse([vector, a.lexical], 5)).map((m) => m.id)
    }
    const vectorFirst = (a: (typeof answers)[number], d: number) => {
      const vector = within(a.near, d).map((m) => m.id)
      return [...vector, ...a.lexical.map((m) => m.id).filter((id) => !vector.includes(id))].slice(0, 5)
    }
    const rows = [
      `Semantic path: the fake concept embedder (64 dimensions) in place of a model; ${dataset.posts.length} posts embedded in ${embeddedIn} s.`,
      "",
      "| answer | recall@5 | MRR@5 | hit@1 | paraphrase recall@5 / MRR@5 | results for a negative |",
      "|---|---|---|---|---|---|",
      summary("lexical only", answers.map((a) => outcome(a.draft, a.lexical.map((m) => m.id))))
    ]
    for (const d of distances) {
      rows.push(summary(`vector only, distance ≤ ${d}`, answers.map((a) => outcome(a.draft, within(a.near, d).map((m) => m.id)))))
      rows.push(summary(`merged (RRF), distance ≤ ${d}${d === maxDistance ? ": the API" : ""}`, answers.map((a) => outcome(a.draft, merged(a, d)))))
      rows.push(summary(`vector, then lexical, distance ≤ ${d}`, answers.map((a) => outcome(a.draft, vectorFirst(a, d)))))
    }
    const differ = answers.filter((a) => JSON.stringify(a.api) !== JSON.stringify(merged(a, maxDistance)))
    rows.push("", differ.length === 0
      ? `The API's answers (SUGGESTIONS_MAX_DISTANCE=${maxDistance}) equal the merged answers above for all ${answers.length} drafts.`
      : `The API's answers differ from the merged answers for: ${differ.map((a) => a.draft.id).join(", ")}`)
    console.log(rows.join("\n"))
  } finally {
    await server.stop()
    await fake.close()
  }
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
    console.log("")
    await semanticReport(database.url)
  }
} finally {
  await database.drop()
}
