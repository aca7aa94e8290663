/**
 * `npm run bench:vector`: what the vector path of `POST /suggestions` costs as
 * a board grows (decision 0009), through the real HTTP endpoint of a server
 * process on real PostgreSQL with pgvector, and the vector query alone.
 *
 * For each size (10k, 100k public posts on one board; BENCH_VECTOR_SIZES to
 * change), in a fresh database:
 * - the board is filled with the synthetic posts of `speed.ts`
 *   (`synthetic.ts`), and each post gets its `post_embeddings` row by SQL:
 *   the fake concept embedder's vector of its text (`conceptVector`, as the
 *   fake API would answer) for the model "bench-concepts", with the source
 *   hash the server's claim computes, so that the server's background
 *   embedder finds nothing to do (the fake's vectors take about 10 ms a post
 *   to compute: 100k posts take minutes to fill);
 * - the model's HNSW index is built here, under the name and definition the
 *   server would use (so the server finds it and builds none), with
 *   maintenance_work_mem = 1GB and one parallel worker: its build time, and
 *   the size of post_embeddings with its indexes (the HNSW one in brackets);
 * - the server runs with the fake embeddings API and SUGGESTIONS_MAX_DISTANCE=2,
 *   so that the vector path always has matches and the fused answer is always
 *   computed. The labelled set's drafts are sent one at a time: one warm-up
 *   pass (which also fills the server's draft-embedding cache, so the API call
 *   is not measured), then 3 passes: p50, p95, p99 of the whole request
 *   (lexical, vector, fusion), once the server's calibrator has measured the
 *   board (decision 0023); then 50 connections for 10 s: requests per second
 *   and p99;
 * - the vector query alone: the server's query (`VectorSearch.nearest`), in
 *   its transaction with `SET LOCAL hnsw.iterative_scan = relaxed_order`, on
 *   one connection, for each draft's vector (a warm-up pass, then 3): p50,
 *   p95 of the whole transaction. Its plan is printed once (EXPLAIN ANALYZE),
 *   with whether it uses the HNSW index.
 *
 * BENCH_DIMENSIONS (default 384) is the vector size; BENCH_DATASET names
 * another labelled set to draw words and drafts from; BENCH_DATABASE_URL
 * (default postgres://postgres@127.0.0.1:5432/postgres) is an admin URL: a
 * fresh database is created and dropped for each size (BENCH_KEEP=1 keeps it).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { make as makeSanitizer } from "../../packages/server/dist/content/Sanitizer.js"
import { indexKind, indexName, vectorLiteral } from "../../packages/server/dist/embeddings/Vectors.js"
import { embeddingInput } from "../../packages/server/dist/embeddings/Embeddings.js"
import { migrate } from "../../packages/server/dist/sql/Database.js"
import { normalizeDraft } from "../../packages/server/dist/suggestions/Semantic.js"
import { maxSuggestions } from "../../packages/server/dist/suggestions/Suggestions.js"
import { conceptVector, startFakeEmbeddings } from "../../test/support/embeddings.ts"
import { freshDatabase, percentile, startProcess, withSql } from "../support.ts"
import { loadDataset } from "../../test/support/dataset.ts"
import { boardId, createBoard, organizationId, type SyntheticPost, synthetic, timeSuggestion } from "./synthetic.ts"

const sizes = (process.env["BENCH_VECTOR_SIZES"] ?? "10000,100000").split(",").map(Number)
const dimensions = Number(process.env["BENCH_DIMENSIONS"] ?? 384)
const model = { name: "bench-concepts", dimensions }
const kind = indexKind(dimensions)
if (kind === undefined) throw new Error(`no HNSW index for ${dimensions} dimensions (4,000 at most)`)
const dataset = loadDataset(process.env["BENCH_DATASET"])
const { fill } = synthetic(dataset)

/** What the server embeds for each draft (`Semantic.nearest`), and so the fake's vector of it. */
const sanitizer = makeSanitizer()
const draftInputs = dataset.drafts.map((d) => embeddingInput(normalizeDraft(d.title), normalizeDraft(sanitizer.text(d.content))))
const draftVectors = draftInputs.map((input) => vectorLiteral(conceptVector(input, dimensions)))

// As `EmbeddingQueue` writes them: the model and the indexed expression as literals, the hash as the claim computes it.
const predicate = (alias = "") => `${alias}model = '${model.name.replace(/'/g, "''")}' AND ${alias}dimensions = ${dimensions}`
const cast = `${kind}(${dimensions})`
const sourceHash = "p.text_hash"

/** One `post_embeddings` row per post, as if the server's embedder had stored the fake's vectors. */
const embed = (url: string) => async (posts: ReadonlyArray<SyntheticPost>) => {
  const rows = posts.map((post) => ({ id: post.id, embedding: vectorLiteral(conceptVector(embeddingInput(post.title, post.text), dimensions)) }))
  await withSql(url, (sql) =>
    sql`INSERT INTO post_embeddings (post_id, model, dimensions, embedding, source_hash, embedded_at)
      SELECT p.id, ${model.name}, ${dimensions}, r.embedding::vector, ${sql.literal(sourceHash)}, now()
      FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(id text, embedding text)
      JOIN posts p ON p.id = r.id`
  )
}

/** `VectorSearch.nearest`'s query, in its transaction; `explain` prefixes it with EXPLAIN ANALYZE (JSON). */
const nearest = (sql: SqlClient.SqlClient, vector: string, explain = false) => {
  const distance = sql.literal(`e.embedding::${cast} <=> `)
  const castTo = sql.literal(`::${cast}`)
  return sql.withTransaction(Effect.gen(function*() {
    yield* sql`SET LOCAL hnsw.iterative_scan = relaxed_order`
    return yield* sql<Record<string, unknown>>`${sql.literal(explain ? "EXPLAIN (ANALYZE, FORMAT JSON) " : "")}SELECT * FROM (
        SELECT p.id, p.title, p.excerpt, p.slug, (${distance}${vector}${castTo})::float8 AS distance
        FROM post_embeddings e
        JOIN posts p ON p.id = e.post_id
        JOIN boards b ON b.id = p.board_id
        WHERE ${sql.literal(predicate("e."))} AND e.embedding IS NOT NULL
          AND p.board_id = ${boardId} AND p.organization_id = ${organizationId} AND p.visibility = 'public'
          AND b.organization_id = ${organizationId} AND b.visibility = 'public'
        ORDER BY ${distance}${vector}${castTo}
        LIMIT ${maxSuggestions}
      ) nearest ORDER BY distance, id`
  }))
}

interface PlanNode {
  readonly "Node Type": string
  readonly "Index Name"?: string
  readonly "Actual Rows"?: number
  readonly Plans?: ReadonlyArray<PlanNode>
}

/** The plan's nodes, outermost first, on one line; and whether one of them scans `index`. */
const planSummary = (plan: { readonly Plan: PlanNode; readonly "Execution Time": number }, index: string) => {
  const nodes: Array<string> = []
  let usesIndex = false
  const walk = (node: PlanNode) => {
    if (node["Index Name"] === index) usesIndex = true
    nodes.push(`${node["Node Type"]}${node["Index Name"] ? ` using ${node["Index Name"]}` : ""} (${node["Actual Rows"] ?? "?"} rows)`)
    for (const child of node.Plans ?? []) walk(child)
  }
  walk(plan.Plan)
  return `${usesIndex ? "uses the HNSW index" : "does NOT use the HNSW index"}, ${plan["Execution Time"].toFixed(2)} ms: ${nodes.join(" > ")}`
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`

const run = async (size: number) => {
  const database = await freshDatabase("vector")
  const url = database.url
  const fake = await startFakeEmbeddings({ dimensions })
  let server: Awaited<ReturnType<typeof startProcess>> | undefined
  try {
    await withSql(url, (sql) => Effect.provideService(migrate, SqlClient.SqlClient, sql))
    await createBoard(url)
    const filling = performance.now()
    await fill(url, 0, size, embed(url))
    const filled = (performance.now() - filling) / 1000

    const index = indexName(model)
    const build = await withSql(url, (sql) =>
      Effect.gen(function*() {
        yield* sql`SET maintenance_work_mem = '1GB'`
        yield* sql`SET max_parallel_maintenance_workers = 1`
        const started = performance.now()
        yield* sql.unsafe(`CREATE INDEX ${index} ON post_embeddings USING hnsw ((embedding::${cast}) ${kind}_cosine_ops) WHERE ${predicate()}`)
        const ms = performance.now() - started
        yield* sql`VACUUM ANALYZE post_embeddings`
        const [sizes] = yield* sql<{ total: string; index: string }>`SELECT pg_total_relation_size('post_embeddings')::text AS total,
          pg_relation_size(${index}::regclass)::text AS index`
        return { ms, total: Number(sizes!.total), index: Number(sizes!.index) }
      })
    )
    console.log(`${size.toLocaleString("en")} posts: filled and embedded in ${filled.toFixed(1)} s, HNSW index built in ${(build.ms / 1000).toFixed(2)} s`)

    server = await startProcess("main.js", {
      DATABASE_URL: url,
      RATE_LIMIT_MULTIPLIER: "1000000",
      EMBEDDINGS_URL: fake.url,
      EMBEDDINGS_MODEL: model.name,
      EMBEDDINGS_DIMENSIONS: String(dimensions),
      SUGGESTIONS_MAX_DISTANCE: "2"
    })
    const origin = server.origin
    const suggest = (draft: { readonly title: string; readonly content: string }) =>
      timeSuggestion(origin, draft).then(({ ms, status }) => {
        if (status !== 200) throw new Error(`POST /suggestions answered ${status}`)
        return ms
      })
    // The board's background (decision 0023), measured by the server's calibrator after start-up: the steady state is measured.
    const calibrating = performance.now()
    for (;;) {
      const [row] = await withSql(url, (sql) =>
        sql<{ posts: number }>`SELECT posts FROM embedding_calibrations WHERE model = ${model.name} AND board_id <> ''`)
      if (row?.posts === size) break
      if (performance.now() - calibrating > 300_000) throw new Error("the board was not calibrated within 5 minutes")
      await new Promise((r) => setTimeout(r, 250))
    }
    console.log(`${size.toLocaleString("en")} posts: calibrated ${((performance.now() - calibrating) / 1000).toFixed(1)} s after start-up`)

    for (const draft of dataset.drafts) await suggest(draft) // warm-up, and the draft-embedding cache
    const callsBefore = fake.calls
    const http: Array<number> = []
    for (let round = 0; round < 3; round++) for (const draft of dataset.drafts) http.push(await suggest(draft))
    http.sort((a, b) => a - b)
    const uncached = fake.calls - callsBefore

    // 50 connections for 10 s, every draft cached: requests per second with both halves.
    const concurrent: Array<number> = []
    const until = performance.now() + 10_000
    const started = performance.now()
    await Promise.all(Array.from({ length: 50 }, async (_, c) => {
      for (let i = c; performance.now() < until; i += 50) concurrent.push(await suggest(dataset.drafts[i % dataset.drafts.length]!))
    }))
    const perSecond = concurrent.length / ((performance.now() - started) / 1000)
    concurrent.sort((a, b) => a - b)

    const { query, plan } = await withSql(url, (sql) =>
      Effect.gen(function*() {
        for (const vector of draftVectors) yield* nearest(sql, vector) // warm-up
        const query: Array<number> = []
        for (let round = 0; round < 3; round++) {
          for (const vector of draftVectors) {
            const started = performance.now()
            yield* nearest(sql, vector)
            query.push(performance.now() - started)
          }
        }
        const [explained] = yield* nearest(sql, draftVectors[0]!, true)
        return { query: query.sort((a, b) => a - b), plan: (explained!["QUERY PLAN"] as ReadonlyArray<Parameters<typeof planSummary>[0]>)[0]! }
      })
    )
    console.log(`${size.toLocaleString("en")} posts: the vector query ${planSummary(plan, index)}`)

    // The server must have found the index and every post embedded: it builds none and embeds none.
    const drafts = new Set(draftInputs)
    const postsEmbedded = fake.inputs.filter((input) => !drafts.has(input)).length
    const [check] = await withSql(url, (sql) =>
      sql<{ indexes: number }>`SELECT count(*)::int AS indexes FROM pg_indexes
        WHERE tablename = 'post_embeddings' AND indexname LIKE 'post_embeddings_hnsw_%'`
    )
    if (postsEmbedded > 0 || check?.indexes !== 1 || uncached > 0) {
      console.log(`${size.toLocaleString("en")} posts: WARNING: the server embedded ${postsEmbedded} posts, there are ${check?.indexes} HNSW indexes, ${uncached} draft embeddings were fetched during the measured passes`)
    }

    const ms = (sorted: ReadonlyArray<number>, p: number) => `${percentile(sorted, p).toFixed(1)} ms`
    return `| ${size.toLocaleString("en")} | ${(build.ms / 1000).toFixed(2)} s | ${mb(build.total)} (HNSW ${mb(build.index)}) | ${ms(http, 0.5)} | ${
      ms(http, 0.95)
    } | ${ms(http, 0.99)} | ${perSecond.toFixed(0)} | ${ms(concurrent, 0.99)} | ${ms(query, 0.5)} | ${ms(query, 0.95)} |`
  } finally {
    await server?.stop()
    await fake.close()
    await database.drop()
  }
}

const rows: Array<string> = []
try {
  for (const size of sizes) rows.push(await run(size))
} finally {
  if (rows.length > 0) {
    console.log(`\n${dimensions} dimensions, ${dataset.drafts.length} drafts × 3 passes\n`)
    console.log("| public posts | index build | table+index size | HTTP p50 | p95 | p99 | 50 connections req/s | p99 | vector SQL p50 | p95 |")
    console.log("|---|---|---|---|---|---|---|---|---|---|")
    for (const row of rows) console.log(row)
  }
}
