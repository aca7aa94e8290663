/**
 * `npm run quality`: how well `POST /suggestions` finds duplicates, on every
 * labelled set (`dataset.ts`: the project's own set and the real ones in
 * `sets/`), with each embedder behind the tests' OpenAI-compatible fake API
 * (`test/support/embeddings.ts`): none (lexical only), the concept embedder,
 * GloVe word vectors averaged with SIF weights (fetched on demand, cached),
 * and hashed character n-grams. Decision 0023.
 *
 * One database holds every set, each in its own organization. A server
 * process imports them; then for each embedder a server process embeds every
 * post and calibrates every board, and each draft is sent to the real HTTP
 * endpoint. The table gives recall@5, MRR@5 and hit@1 over the drafts with a
 * duplicate, and the results per draft with none and the share of those
 * answered `[]`, per set, embedder and half: every set's drafts are dealt into
 * a "fit" half and a "held-out" half (`halves`), and every threshold in the
 * code was fitted on "fit" only. "trigram" is a plain whole-board trigram
 * ranking (pg_trgm `similarity` of title and text, top 5), for comparison.
 *
 * `-- --verbose` adds how the p-values and gaps spread per set and embedder.
 * `-- --small` also asks every draft on small boards (decision 0027): each
 * set's board dealt by a hash of the post ids into boards of about
 * `smallBoardPosts` posts, once as they are and once with up to
 * `pairsPerSmallBoard` real duplicates among their posts (drafts of the fit
 * half placed beside their original, and then not asked), in the same
 * organization as the whole board, whose pool they borrow. A draft is asked on
 * the small board of its (first) expected post, or, with no duplicate, on one
 * chosen by a hash of its id.
 * `npm run quality -- --fit` also fits, on the fit half only, the lexical
 * selection (`Selection`) and then the blend of the two halves (`Blend`), and
 * prints what it found with both halves' numbers; the constants in
 * `Suggestions.ts` and `blend.ts` are set from it by hand.
 *
 * BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres) is
 * an admin URL: a fresh database is created and dropped. QUALITY_EMBEDDERS
 * (default "concept,glove,ngram") chooses the embedders.
 */
import { ConfigProvider, Effect, Layer } from "effect"
import { mkdtemp, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Blend, Near } from "../../packages/server/dist/suggestions/blend.js"
import type { Selection } from "../../packages/server/dist/suggestions/Suggestions.js"
import { type Embedder, startFakeEmbeddings } from "../../test/support/embeddings.ts"
import { freshDatabase, startProcess, withSql } from "../support.ts"
import { datasetOrganization, type Draft, type Half, halves, hash, type LabelledSet, loadSets } from "./dataset.ts"

const fit = process.argv.includes("--fit")
const small = process.argv.includes("--small")
const sets = loadSets()
const embedders = (process.env["QUALITY_EMBEDDERS"] ?? "concept,glove,ngram").split(",").filter((e) => e !== "") as Array<Embedder>
const dimensions: Record<Embedder, number> = { concept: 64, glove: 100, ngram: 256 }

const { Core } = await import("../../packages/server/dist/App.js")
const { ServerConfig } = await import("../../packages/server/dist/config.js")
const { maxSuggestions, select, selection, Suggestions } = await import("../../packages/server/dist/suggestions/Suggestions.js")
const { Semantic } = await import("../../packages/server/dist/suggestions/Semantic.js")
const { SuggestionQueries } = await import("../../packages/server/dist/suggestions/SuggestionQueries.js")
const { blend, gapOf, merge, nearLimit } = await import("../../packages/server/dist/suggestions/blend.js")
/** The server's default `SUGGESTIONS_MAX_DISTANCE`: the runs leave it unset. */
const maxDistance = 1
const { Sanitizer } = await import("../../packages/server/dist/content/Sanitizer.js")

/** One draft, with what each answer gave. */
interface Case {
  readonly set: LabelledSet
  readonly half: Half
  readonly draft: Draft
  /** Every lexical candidate, best first, with its coverage (before the selection). */
  ranked: ReadonlyArray<{ readonly id: string; readonly coverage: number }>
  trigram: ReadonlyArray<string>
  /** The API's answers: "none" without embeddings, then per embedder. */
  readonly api: Map<string, ReadonlyArray<string>>
  /** The nearest posts per embedder, with their p-values, as the API saw them. */
  readonly near: Map<string, ReadonlyArray<Near>>
}

const cases: Array<Case> = sets.flatMap((set) => {
  const half = halves(set)
  return set.drafts.map((draft) => ({ set, half: half.get(draft.id)!, draft, ranked: [], trigram: [], api: new Map(), near: new Map() }))
})
const requestOf = (c: { readonly set: LabelledSet; readonly draft: Draft }) => ({ organizationId: c.set.organizationId, boardId: c.draft.boardId, title: c.draft.title, content: c.draft.content })

// ---------------------------------------------------------------------------
// Small boards (`--small`)

/** Posts of a small board, about. */
const smallBoardPosts = 9
/** Real duplicates a small board of the "with duplicates" kind holds besides its posts, at most. */
const pairsPerSmallBoard = 2

type SmallKind = "plain" | "duplicates"
/** A draft asked on a small board: its board and expected posts are the small board's. */
interface SmallCase {
  readonly set: LabelledSet
  readonly half: Half
  readonly kind: SmallKind
  readonly draft: Draft
  readonly api: Map<string, ReadonlyArray<string>>
}

/** The small boards of a set, as fixture boards and posts of its organization, and the drafts to ask on them. */
const smallBoardsOf = (set: LabelledSet) => {
  const half = halves(set)
  const boards: Array<{ id: string; name: string; slug: string; visibility: "public" }> = []
  const posts: Array<{ id: string; boardId: string; title: string; content: string; createdAt: string }> = []
  const asked: Array<SmallCase> = []
  for (const board of set.boards) {
    const own = set.posts.filter((p) => p.boardId === board.id).sort((a, b) => hash(a.id) - hash(b.id) || (a.id < b.id ? -1 : 1))
    const count = Math.max(1, Math.round(own.length / smallBoardPosts))
    const chunkOf = new Map(own.map((p, i) => [p.id, i % count]))
    const drafts = set.drafts.filter((d) => d.boardId === board.id)
    for (const kind of ["plain", "duplicates"] as const) {
      const tag = kind === "plain" ? "p" : "d"
      const boardId = (k: number) => `${board.id}~${tag}${k}`
      for (let k = 0; k < count; k++) boards.push({ id: boardId(k), name: boardId(k), slug: `${boardId(k)}`.replace(/[^a-z0-9-]/gi, "-").toLowerCase(), visibility: "public" })
      for (const p of own) posts.push({ id: `${p.id}~${tag}`, boardId: boardId(chunkOf.get(p.id)!), title: p.title, content: p.content, createdAt: p.createdAt })
      // Drafts of the fit half placed as posts beside their original: real duplicates among the board's posts.
      const placed = new Map<string, Draft>()
      if (kind === "duplicates") {
        const perBoard = new Map<number, number>()
        for (const d of drafts.filter((d) => d.expected.length > 0 && half.get(d.id) === "fit").sort((a, b) => hash(a.id) - hash(b.id))) {
          const k = chunkOf.get(d.expected[0]!)!
          if ((perBoard.get(k) ?? 0) >= pairsPerSmallBoard) continue
          perBoard.set(k, (perBoard.get(k) ?? 0) + 1)
          placed.set(d.id, d)
          posts.push({ id: `${d.id}~${tag}`, boardId: boardId(k), title: d.title, content: d.content, createdAt: "2026-01-01T00:00:00.000Z" })
        }
      }
      for (const d of drafts) {
        if (placed.has(d.id)) continue
        const k = d.expected.length > 0 ? chunkOf.get(d.expected[0]!)! : hash(d.id) % count
        const expected = [
          ...d.expected.filter((id) => chunkOf.get(id) === k).map((id) => `${id}~${tag}`),
          // A placed draft asks for the same thing as its original: finding it is finding the request.
          ...[...placed.values()].filter((x) => chunkOf.get(x.expected[0]!) === k && d.expected.includes(x.expected[0]!)).map((x) => `${x.id}~${tag}`)
        ]
        asked.push({ set, half: half.get(d.id)!, kind, draft: { ...d, boardId: boardId(k), expected }, api: new Map() })
      }
    }
  }
  return { boards, posts, asked }
}

const smallBoards = new Map(sets.map((set) => [set, small ? smallBoardsOf(set) : { boards: [], posts: [], asked: [] }]))
const smallCases = [...smallBoards.values()].flatMap((s) => s.asked)

/** Services of the server (dist) in this process, on `env`. */
const inProcess = <A>(env: Record<string, string>, f: Effect.Effect<A, never, any>) =>
  Effect.runPromise(f.pipe(
    Effect.provide(
      Layer.mergeAll(Semantic.layer).pipe(
        Layer.provide(SuggestionQueries.layer),
        Layer.provideMerge(Core),
        Layer.provideMerge(ServerConfig.layer),
        Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env })))
      )
    ),
    Effect.scoped
  ) as Effect.Effect<A>)

const askApi = async (origin: string, label: string) => {
  for (const c of [...cases, ...smallCases]) {
    const res = await fetch(`${origin}/api/widget/v1/suggestions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(requestOf(c))
    })
    if (res.status !== 200) throw new Error(`POST /suggestions answered ${res.status} for ${c.draft.id}`)
    c.api.set(label, ((await res.json()) as Array<{ id: string }>).map((m) => m.id))
  }
}

/** Waits until every public post has the model's vector and every board a background of all of them. */
const settled = async (databaseUrl: string, model: string) => {
  const started = performance.now()
  for (;;) {
    const [row] = await withSql(databaseUrl, (sql) =>
      sql<{ waiting: number; uncalibrated: number }>`SELECT
        (SELECT count(*)::int FROM posts p LEFT JOIN post_embeddings e ON e.post_id = p.id AND e.model = ${model} AND e.embedding IS NOT NULL
          WHERE p.visibility = 'public' AND e.post_id IS NULL) AS waiting,
        (SELECT count(*)::int FROM boards b WHERE NOT EXISTS (SELECT 1 FROM embedding_calibrations c WHERE c.board_id = b.id AND c.model = ${model}
          AND c.posts = (SELECT count(*) FROM posts p WHERE p.board_id = b.id AND p.visibility = 'public'))) AS uncalibrated`)
    if (row!.waiting === 0 && row!.uncalibrated === 0) return ((performance.now() - started) / 1000).toFixed(1)
    if (performance.now() - started > 300_000) throw new Error(`${model}: ${row!.waiting} posts not embedded, ${row!.uncalibrated} boards not calibrated after 5 minutes`)
    await new Promise((r) => setTimeout(r, 250))
  }
}

// ---------------------------------------------------------------------------
// Metrics

interface Metrics {
  readonly positives: number
  readonly recall: number
  readonly mrr: number
  readonly hit1: number
  readonly negatives: number
  readonly perNegative: number
  readonly emptyShare: number
}

const metricsOf = (list: ReadonlyArray<{ readonly draft: Draft; readonly ids: ReadonlyArray<string> }>): Metrics => {
  const positives = list.filter((x) => x.draft.expected.length > 0)
  const negatives = list.filter((x) => x.draft.expected.length === 0)
  const mean = <A>(xs: ReadonlyArray<A>, f: (x: A) => number) => xs.length === 0 ? 0 : xs.reduce((s, x) => s + f(x), 0) / xs.length
  const rank = (x: { readonly draft: Draft; readonly ids: ReadonlyArray<string> }) => {
    const i = x.ids.slice(0, 5).findIndex((id) => x.draft.expected.includes(id))
    return i < 0 ? undefined : i + 1
  }
  return {
    positives: positives.length,
    recall: mean(positives, (x) => x.draft.expected.filter((id) => x.ids.slice(0, 5).includes(id)).length / x.draft.expected.length),
    mrr: mean(positives, (x) => 1 / (rank(x) ?? Infinity)),
    hit1: mean(positives, (x) => rank(x) === 1 ? 1 : 0),
    negatives: negatives.length,
    perNegative: mean(negatives, (x) => Math.min(5, x.ids.length)),
    emptyShare: mean(negatives, (x) => x.ids.length === 0 ? 1 : 0)
  }
}

const f2 = (x: number) => x.toFixed(2)
const groups = (list: ReadonlyArray<Case>) => sets.flatMap((set) => (["fit", "held-out"] as const).map((half) => ({ set, half, list: list.filter((c) => c.set === set && c.half === half) })))

const lexicalIds = (c: Case, s: Selection = selection) => select(c.ranked, s).slice(0, maxSuggestions).map((r) => r.id)
const mergedIds = (c: Case, embedder: string, s: Selection = selection, b: Blend = blend) => {
  const near = c.near.get(embedder) ?? []
  return merge(lexicalIds(c, s), c.ranked, near, maxSuggestions, maxDistance, b)
}

// ---------------------------------------------------------------------------
// The runs

const database = await freshDatabase("quality")
const dir = await mkdtemp(join(tmpdir(), "hearken-quality-"))
const seedFile = join(dir, "fixture.json")
await writeFile(seedFile, JSON.stringify({
  organizations: sets.map((set) => {
    const organization = datasetOrganization(set, set.organizationId)
    const extra = smallBoards.get(set)!
    return { ...organization, boards: [...organization.boards, ...extra.boards], posts: [...organization.posts, ...extra.posts] }
  })
}))
const rateLimits = { RATE_LIMIT_MULTIPLIER: "100000" }

try {
  // Lexical: the API without embeddings, the candidates in process, and the trigram ranking.
  const lexicalServer = await startProcess("main.js", { DATABASE_URL: database.url, SEED_FILE: seedFile, ...rateLimits })
  try {
    await askApi(lexicalServer.origin, "none")
  } finally {
    await lexicalServer.stop()
  }
  await inProcess({ DATABASE_URL: database.url, LOG_LEVEL: "warn" }, Effect.gen(function*() {
    const suggestions = yield* Suggestions
    for (const c of cases) c.ranked = (yield* suggestions.rank(requestOf(c))).map((r) => ({ id: r.match.id, coverage: r.coverage }))
  }))
  const plain = (html: string) => html.replace(/<[^>]*>/g, " ")
  await withSql(database.url, (sql) =>
    Effect.forEach(cases, (c) => {
      const draft = `${c.draft.title} ${plain(c.draft.content)}`
      return sql<{ id: string }>`SELECT p.id FROM posts p
        WHERE p.organization_id = ${c.set.organizationId} AND p.board_id = ${c.draft.boardId} AND p.visibility = 'public'
          AND similarity(p.title || ' ' || regexp_replace(p.content, '<[^>]*>', ' ', 'g'), ${draft}) > 0
        ORDER BY similarity(p.title || ' ' || regexp_replace(p.content, '<[^>]*>', ' ', 'g'), ${draft}) DESC, p.id
        LIMIT 5`.pipe(Effect.map((rows) => (c.trigram = rows.map((r) => r.id))))
    }))

  for (const embedder of embedders) {
    const fake = await startFakeEmbeddings({ embedder, dimensions: dimensions[embedder] })
    const env = {
      DATABASE_URL: database.url,
      EMBEDDINGS_URL: fake.url,
      EMBEDDINGS_MODEL: `quality-${embedder}`,
      EMBEDDINGS_DIMENSIONS: String(dimensions[embedder]),
      // Calibration rounds every second, so that the run does not wait for the 10 s default.
      EMBEDDINGS_RETRY_BASE_MS: "1000"
    }
    try {
      const server = await startProcess("main.js", { ...env, ...rateLimits })
      try {
        const took = await settled(database.url, env.EMBEDDINGS_MODEL)
        console.error(`${embedder}: embedded and calibrated in ${took} s`)
        await askApi(server.origin, embedder)
      } finally {
        await server.stop()
      }
      await inProcess({ ...env, LOG_LEVEL: "warn" }, Effect.gen(function*() {
        const semantic = yield* Semantic
        const sanitizer = yield* Sanitizer
        for (const c of cases) {
          const near = yield* semantic.nearest({ ...requestOf(c), text: sanitizer.text(c.draft.content), limit: nearLimit })
          c.near.set(embedder, near._tag === "Some" ? near.value.map(({ distance, id, p }) => ({ id, distance, p })) : [])
        }
      }))
    } finally {
      await fake.close()
    }
  }
} finally {
  await database.drop()
}

// ---------------------------------------------------------------------------
// Fitting (fit half only)

const fitCases = cases.filter((c) => c.half === "fit")
const bySet = (list: ReadonlyArray<Case>) => sets.map((set) => list.filter((c) => c.set === set))

let chosenSelection: Selection = selection
let chosenBlend: Blend = blend
if (fit) {
  // The lexical selection: on every set at most one result per draft with no duplicate; then the best recall + MRR summed over the sets.
  const grid: Array<Selection> = []
  for (const confident of [0.15, 0.175, 0.2, 0.225, 0.25, 0.3, 0.35]) {
    for (const floor of [0.05, 0.07, 0.08, 0.09, 0.1, 0.12, 0.15]) {
      for (const standOut of [1.2, 1.3, 1.4, 1.5, 1.75, 2, 2.5]) {
        for (const follow of [0.5, 0.6, 0.7, 0.8, 0.9]) grid.push({ confident, floor, standOut, follow })
      }
    }
  }
  const lexicalScore = (s: Selection) => {
    const per = bySet(fitCases).map((list) => metricsOf(list.map((c) => ({ draft: c.draft, ids: lexicalIds(c, s) }))))
    return { ok: per.every((m) => m.perNegative <= 1), score: per.reduce((t, m) => t + m.recall + m.mrr, 0), worstNegative: Math.max(...per.map((m) => m.perNegative)) }
  }
  const lexicalRanked = grid.map((s) => ({ s, ...lexicalScore(s) })).sort((a, b) =>
    Number(b.ok) - Number(a.ok) || (a.ok ? b.score - a.score : a.worstNegative - b.worstNegative))
  chosenSelection = lexicalRanked[0]!.s
  console.log(`Fitted selection (fit half): ${JSON.stringify(chosenSelection)}; in the code: ${JSON.stringify(selection)}`)

  // The blend, for every embedder at once: on every set and embedder, recall and MRR at least the lexical answer's, and results per
  // draft with no duplicate at most the lexical answer's and at most 1; then the best recall + MRR summed; else the least shortfall.
  const blends: Array<Blend> = []
  for (const alone of [0, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3]) {
    for (const gap of alone === 0 ? [1] : [0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4]) {
      for (const withWords of [0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7]) {
        for (const wordsFloor of withWords === 0 ? [1] : [0.02, 0.05, 0.08, 0.1, 0.12]) blends.push({ alone, gap, withWords, wordsFloor })
      }
    }
  }
  const blendScore = (b: Blend) => {
    let score = 0
    let shortfall = 0
    for (const list of bySet(fitCases)) {
      const lexical = metricsOf(list.map((c) => ({ draft: c.draft, ids: lexicalIds(c, chosenSelection) })))
      for (const embedder of embedders) {
        const m = metricsOf(list.map((c) => ({ draft: c.draft, ids: mergedIds(c, embedder, chosenSelection, b) })))
        score += m.recall + m.mrr
        shortfall += Math.max(0, lexical.recall - m.recall) + Math.max(0, lexical.mrr - m.mrr) +
          Math.max(0, m.perNegative - Math.min(1, lexical.perNegative))
      }
    }
    return { score, shortfall }
  }
  const blendRanked = blends.map((b) => ({ b, ...blendScore(b) })).sort((a, b) => a.shortfall - b.shortfall || b.score - a.score)
  chosenBlend = blendRanked[0]!.b
  console.log(`Fitted blend (fit half): ${JSON.stringify(chosenBlend)}; shortfall ${f2(blendRanked[0]!.shortfall)}; in the code: ${JSON.stringify(blend)}`)
  console.log("")
}

// ---------------------------------------------------------------------------
// The report

// With --fit, also the lexical ranking's top 5 before any threshold: what the selection can reach at best.
const answers = ["trigram", ...(fit ? ["ranked"] : []), "none", ...embedders]
const idsOf = (c: Case, answer: string) =>
  answer === "trigram" ? c.trigram : answer === "ranked" ? c.ranked.slice(0, 5).map((r) => r.id) : fit ? (answer === "none" ? lexicalIds(c, chosenSelection) : mergedIds(c, answer, chosenSelection, chosenBlend)) : c.api.get(answer)!

console.log(`${sets.map((s) => `${s.name} (${s.language}): ${s.posts.length} posts, ${s.drafts.filter((d) => d.expected.length > 0).length} drafts with a duplicate, ${s.drafts.filter((d) => d.expected.length === 0).length} without`).join("; ")}.`)
console.log(fit
  ? "Answers computed in process with the FITTED values above (not the API's)."
  : "Answers of POST /suggestions (the API), with the values in the code, fitted on the \"fit\" half.")
console.log("")
console.log("| set | half | embedder | recall@5 | MRR@5 | hit@1 | results per no-duplicate draft | empty answers (no-duplicate drafts) |")
console.log("|---|---|---|---|---|---|---|---|")
for (const { half, list, set } of groups(cases)) {
  const positives = list.filter((c) => c.draft.expected.length > 0).length
  for (const answer of answers) {
    const m = metricsOf(list.map((c) => ({ draft: c.draft, ids: idsOf(c, answer) })))
    const mark = half === "held-out" ? "**held-out**" : "fit"
    console.log(`| ${set.name} | ${mark} (${positives}+${m.negatives}) | ${answer === "none" ? "none (lexical)" : answer} | ${f2(m.recall)} | ${f2(m.mrr)} | ${f2(m.hit1)} | ${f2(m.perNegative)} | ${f2(m.emptyShare)} |`)
  }
}

// The targets, on the held-out half.
const misses: Array<string> = []
for (const { half, list, set } of groups(cases)) {
  if (half !== "held-out") continue
  const of = (answer: string) => metricsOf(list.map((c) => ({ draft: c.draft, ids: idsOf(c, answer) })))
  const [trigram, lexical] = [of("trigram"), of("none")]
  if (!(lexical.recall > trigram.recall)) misses.push(`${set.name}: lexical recall@5 ${f2(lexical.recall)} not above trigram ${f2(trigram.recall)}`)
  if (!(lexical.mrr > trigram.mrr)) misses.push(`${set.name}: lexical MRR@5 ${f2(lexical.mrr)} not above trigram ${f2(trigram.mrr)}`)
  if (lexical.perNegative > 1) misses.push(`${set.name}: lexical ${f2(lexical.perNegative)} results per no-duplicate draft`)
  for (const embedder of embedders) {
    const m = of(embedder)
    if (m.recall < lexical.recall) misses.push(`${set.name}/${embedder}: recall@5 ${f2(m.recall)} below lexical ${f2(lexical.recall)}`)
    if (m.mrr < lexical.mrr) misses.push(`${set.name}/${embedder}: MRR@5 ${f2(m.mrr)} below lexical ${f2(lexical.mrr)}`)
    if (m.perNegative > Math.min(1, lexical.perNegative)) misses.push(`${set.name}/${embedder}: ${f2(m.perNegative)} results per no-duplicate draft, lexical ${f2(lexical.perNegative)}`)
  }
}
console.log("")
console.log(misses.length === 0 ? "Held-out half: every target met." : `Held-out half, targets missed:\n- ${misses.join("\n- ")}`)

if (small) {
  for (const kind of ["plain", "duplicates"] as const) {
    const list = smallCases.filter((c) => c.kind === kind)
    const boards = [...smallBoards.values()].flatMap((s) => s.boards).filter((b) => b.id.includes(kind === "plain" ? "~p" : "~d"))
    console.log("")
    console.log(kind === "plain"
      ? `Small boards (--small): ${boards.length} boards of about ${smallBoardPosts} posts, each draft asked on the one of its expected post.`
      : `Small boards with real duplicates (--small): the same boards, with up to ${pairsPerSmallBoard} drafts of the fit half placed beside their originals (not asked).`)
    console.log("")
    console.log("| set | half | embedder | recall@5 | MRR@5 | hit@1 | results per no-duplicate draft | empty answers (no-duplicate drafts) |")
    console.log("|---|---|---|---|---|---|---|---|")
    for (const set of sets) {
      for (const half of ["fit", "held-out"] as const) {
        const group = list.filter((c) => c.set === set && c.half === half)
        for (const answer of ["none", ...embedders]) {
          const m = metricsOf(group.map((c) => ({ draft: c.draft, ids: c.api.get(answer)! })))
          const mark = half === "held-out" ? "**held-out**" : "fit"
          console.log(`| ${set.name} | ${mark} (${m.positives}+${m.negatives}) | ${answer === "none" ? "none (lexical)" : answer} | ${f2(m.recall)} | ${f2(m.mrr)} | ${f2(m.hit1)} | ${f2(m.perNegative)} | ${f2(m.emptyShare)} |`)
        }
      }
    }
  }
}

if (!fit) {
  // The API's answers are the in-process merge of the same candidates: the report measures what the code says.
  const differ = cases.flatMap((c) => embedders.filter((e) => JSON.stringify(c.api.get(e)) !== JSON.stringify(mergedIds(c, e))).map((e) => `${c.draft.id}/${e}`))
  const lexicalDiffer = cases.filter((c) => JSON.stringify(c.api.get("none")) !== JSON.stringify(lexicalIds(c))).map((c) => c.draft.id)
  console.log(differ.length + lexicalDiffer.length === 0
    ? `The API's answers equal the in-process merge for all ${cases.length} drafts and ${embedders.length} embedders.`
    : `The API's answers differ from the in-process merge for: ${[...lexicalDiffer, ...differ].join(", ")}`)
}

if (process.argv.includes("--verbose")) {
  // How the p-values and gaps (blend.ts) of the expected posts, and of the nearest post of drafts with no duplicate, spread.
  const q = (xs: Array<number>, p: number) => xs.length === 0 ? NaN : xs.sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!
  const share = (xs: ReadonlyArray<number>, keep: (x: number) => boolean) => f2(xs.filter(keep).length / xs.length)
  for (const set of sets) {
    for (const embedder of embedders) {
      const list = cases.filter((c) => c.set === set)
      const expected = list.filter((c) => c.draft.expected.length > 0).map((c) => {
        const near = c.near.get(embedder)!
        const i = near.findIndex((n) => c.draft.expected.includes(n.id))
        return i < 0 ? { p: 1, gap: -1 } : { p: near[i]!.p, gap: gapOf(near, i) }
      })
      const nearest = list.filter((c) => c.draft.expected.length === 0).map((c) => {
        const near = c.near.get(embedder)!
        return near.length === 0 ? { p: 1, gap: -1 } : { p: near[0]!.p, gap: gapOf(near, 0) }
      })
      const [ep, eg, np, ng] = [expected.map((x) => x.p), expected.map((x) => x.gap), nearest.map((x) => x.p), nearest.map((x) => x.gap)]
      console.log(`${set.name}/${embedder}: expected post p q50 ${q(ep, 0.5).toFixed(3)}, p ≤ 0.05 ${share(ep, (x) => x <= 0.05)}, ≤ 0.2 ${share(ep, (x) => x <= 0.2)}, gap q50 ${q(eg, 0.5).toFixed(2)}, ≥ 0.3 ${share(eg, (x) => x >= 0.3)} | no-duplicate drafts' nearest p ≤ 0.05 ${share(np, (x) => x <= 0.05)}, ≤ 0.2 ${share(np, (x) => x <= 0.2)}, gap ≥ 0.3 ${share(ng, (x) => x >= 0.3)}`)
    }
  }
}
