import { Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { createHash } from "node:crypto"
import { Sessions } from "../sql/Database.js"
import { ReadSql } from "../sql/ReadReplica.js"
import { storedKindAt, wordKinds } from "../lexicon/lexicon.js"
import type { Model, Vector } from "./Embeddings.js"

/** A post leased for embedding: its text as it is now, and the hash that will say so. */
export interface ClaimedPost {
  readonly postId: string
  readonly title: string
  /** Sanitized HTML. */
  readonly content: string
  readonly sourceHash: string
}

export interface Claim {
  readonly model: Model
  readonly nowMs: number
  readonly limit: number
  readonly leaseMs: number
  readonly token: string
  /** Only these posts (just created); otherwise any post that is due (the back-fill). */
  readonly postIds?: ReadonlyArray<string> | undefined
}

export interface Failure {
  readonly model: Model
  readonly nowMs: number
  readonly token: string
  readonly postIds: ReadonlyArray<string>
  readonly error: string
  /** A post's n-th failure is retried `min(baseMs × 2^(n−1), maxMs)` later. */
  readonly baseMs: number
  readonly maxMs: number
}

export interface NearPost {
  readonly id: string
  readonly title: string
  readonly excerpt: string
  readonly slug: string
  /** Cosine distance, 0 (same direction) to 2. */
  readonly distance: number
}

const iso = (ms: number) => new Date(ms).toISOString()

/** pgvector's text form. */
export const vectorLiteral = (vector: Vector) => `[${vector.join(",")}]`

/**
 * How a model's vectors are indexed (decision 0009). HNSW indexes `vector` up
 * to 2,000 dimensions and `halfvec` up to 4,000; past that there is no index
 * and a board's posts are compared one by one.
 */
export const indexKind = (dimensions: number): "vector" | "halfvec" | undefined =>
  dimensions <= 2_000 ? "vector" : dimensions <= 4_000 ? "halfvec" : undefined

/** One partial index per model and size, named by their hash (names are limited to 63 bytes). */
export const indexName = (model: Model) =>
  `post_embeddings_hnsw_${createHash("sha256").update(`${model.name}\u0000${model.dimensions}`).digest("hex").slice(0, 16)}`

/** A string as a SQL literal (standard_conforming_strings is on in every supported PostgreSQL). */
const quote = (value: string) => `'${value.replace(/'/g, "''")}'`

/**
 * The model's rows, and the expression its index is on, as literals: a
 * partial index is only used when the planner can prove its predicate, which
 * it cannot from a bind parameter in a generic plan.
 */
const modelSql = (model: Model, alias = "") => {
  const n = Math.trunc(model.dimensions)
  const cast = indexKind(n) ?? "vector"
  return {
    predicate: `${alias}model = ${quote(model.name)} AND ${alias}dimensions = ${n}`,
    column: `(embedding::${cast}(${n}))`,
    cast: `${cast}(${n})`,
    opclass: `${cast}_cosine_ops`
  }
}

/** Boards of at most this many posts are compared pair by pair when calibrating: 300² distances take milliseconds. */
export const exactUpTo = 300

/** The rows of the model, as a literal predicate on `post_embeddings` (aliased with `alias`). */
export const modelPredicate = (model: Model, alias = "") => modelSql(model, alias).predicate

/** The hash of a post's title and content (a generated column): a post whose text changes is due again. */
const sourceHash = "p.text_hash"

/**
 * Posts with the same key are copies of one text (decision 0027): the same
 * lexical features (`lexicon/lexicon.ts`: the same words whatever their case,
 * accents, punctuation, spacing or markup), or, for a post with none, the same
 * title and content. Copies are one post in a board's background: two visitors
 * posting the same words are not two requests that happen to be close.
 */
const copyKey = `CASE WHEN p.lexicon IS NULL OR length(p.lexicon) = 0 THEN 't' || p.text_hash ELSE 'w' || md5(p.lexicon::text) END`

/** A post's words (`wordKinds`), as a sorted array of its stored lexemes. */
const wordsOf = (lexicon: string) =>
  `ARRAY(SELECT f FROM unnest(tsvector_to_array(coalesce(${lexicon}, ''::tsvector))) f WHERE substr(f, ${storedKindAt}, 1) IN (${
    wordKinds.map((k) => `'${k}'`).join(", ")
  }))`

/**
 * A near-exact copy keeps this many of its text's words at least: one word
 * edited in a text of four or more. In shorter ones, one word is a third or
 * half of what is asked: "Export to PDF" and "Export to CSV", "Integration
 * with Slack" and "Integration with Teams" are two requests.
 */
export const nearCopyShares = 3

/**
 * Whether two posts are near-exact copies (decision 0027): the same words
 * but for one added, removed or replaced, and at least `nearCopyShares` in
 * common. `a` has its words as an array (`words`) and their count (`n`); `b`
 * its lexicon and, when known, the count of its words. A post without words
 * is no one's near copy. The shared words are counted in C (`ts_delete`);
 * `b`'s words are counted only when all of `a`'s but one are among them.
 */
const nearCopy = (a: { readonly words: string; readonly n: string }, b: { readonly lexicon: string; readonly n?: string }) => {
  const shared = `(length(${b.lexicon}) - length(ts_delete(${b.lexicon}, ${a.words})))`
  return `(CASE WHEN ${a.n} < ${nearCopyShares} OR ${b.lexicon} IS NULL ${b.n === undefined ? "" : `OR abs(${a.n} - ${b.n}) > 1`} THEN false
    WHEN ${a.n} - ${shared} > 1 OR ${shared} < ${nearCopyShares} THEN false
    ELSE ${b.n ?? `cardinality(${wordsOf(b.lexicon)})`} - ${shared} <= 1 END)`
}

/** The SQL of `post_embeddings`: the embedding queue and the vectors. */
export class EmbeddingRepo extends Context.Service<EmbeddingRepo, {
  /**
   * Creates the model's HNSW index unless it exists (dropping a broken one
   * left by an interrupted concurrent build). Yields whether there is one.
   */
  readonly ensureIndex: (model: Model, options: { readonly concurrently: boolean }) => Effect.Effect<boolean, SqlError.SqlError>
  /**
   * Leases up to `limit` public posts of public boards whose embedding for
   * the model is missing or of an older text, and not waiting for a retry nor
   * leased by another worker. Two workers never hold the same post.
   */
  readonly claim: (claim: Claim) => Effect.Effect<ReadonlyArray<ClaimedPost>, SqlError.SqlError>
  /** Stores vectors of posts this lease holds; yields how many were stored. */
  readonly store: (model: Model, token: string, rows: ReadonlyArray<{ readonly post: ClaimedPost; readonly vector: Vector }>) => Effect.Effect<number, SqlError.SqlError>
  /** Gives back every post this lease holds, untouched: a worker that stops lets another take them at once. */
  readonly release: (model: Model, token: string) => Effect.Effect<void, SqlError.SqlError>
  /** Gives the posts back with their next try pushed out by the backoff. */
  readonly fail: (failure: Failure) => Effect.Effect<void, SqlError.SqlError>
  /**
   * The public posts of a public board of the organization nearest to `vector`,
   * closest first, at most `limit`. Filters by organization, board, visibility
   * and model; pgvector's iterative index scan keeps looking when the filters
   * drop the nearest rows. `exact`: every post of the board is compared, the
   * index unused (the HNSW graph is approximate: on a small board of
   * near-identical posts it can miss the nearest one).
   */
  readonly nearest: (model: Model, query: {
    readonly organizationId: string
    readonly boardId: string
    readonly vector: Vector
    readonly limit: number
    readonly exact?: boolean
  }) => Effect.Effect<ReadonlyArray<NearPost>, SqlError.SqlError>
  /**
   * The distance from each of up to `sample` public posts of a public board
   * (drawn at random) to its nearest other public post of the board, for the
   * model, ascending: the board's background (decision 0023). Copies and
   * near-exact copies count once (`copyKey`, `nearCopy`, decision 0027): one
   * post of a group is drawn, and its nearest neighbour is neither. A board
   * of at most `exactUpTo` posts is compared pair by pair; a larger one walks
   * the model's index once per sampled post.
   */
  readonly neighbourDistances: (model: Model, boardId: string, sample: number) => Effect.Effect<ReadonlyArray<number>, SqlError.SqlError>
  /**
   * How many public posts of public boards have no embedding of their
   * current text for the model, database-wide: what the back-fill has left (the metrics' gauge,
   * `EmbeddingGauges.ts`).
   */
  readonly backlog: (model: Model) => Effect.Effect<number, SqlError.SqlError>
}>()("hearken/EmbeddingRepo") {
  static readonly layer = Layer.effect(
    EmbeddingRepo,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      // `nearest` is a suggestion's read (`ReadSql`); the rest is the embedding worker's and the calibrator's, on the primary.
      const reads = (yield* ReadSql).client
      const sessions = yield* Sessions

      const ensureIndex = Effect.fn("EmbeddingRepo.ensureIndex")(function*(model: Model, options: { readonly concurrently: boolean }) {
        const kind = indexKind(model.dimensions)
        if (kind === undefined) return false
        const name = indexName(model)
        const [existing] = yield* sql<{ valid: boolean; building: boolean }>`SELECT i.indisvalid AS valid,
            EXISTS (SELECT 1 FROM pg_stat_progress_create_index b WHERE b.index_relid = c.oid) AS building
          FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid WHERE c.relname = ${name}`
        if (existing?.valid === true) return true
        // Another instance is building it: leave it be (dropping it would queue a lock that stops every query on the table).
        if (existing?.building === true) return true
        if (existing !== undefined) yield* sql.unsafe(`DROP INDEX IF EXISTS ${name}`)
        const m = modelSql(model)
        // Past the statement timeout: a build takes as long as the table is big.
        yield* sessions.unbounded(
          `CREATE INDEX ${options.concurrently ? "CONCURRENTLY " : ""}IF NOT EXISTS ${name}
           ON post_embeddings USING hnsw (${m.column} ${m.opclass}) WHERE ${m.predicate}`
        )
        return true
      })

      const claim = Effect.fn("EmbeddingRepo.claim")((c: Claim) => {
        const now = iso(c.nowMs)
        const only = c.postIds === undefined ? sql`` : sql`AND p.id IN ${sql.in(c.postIds)}`
        return sql<ClaimedPost>`WITH due AS (
            SELECT p.id FROM posts p
            -- Only what can be suggested leaves for the API: a public post on a public board (docs/api.md:
            -- "Suggestions by meaning: embeddings"). A board made private stops its posts at once.
            JOIN boards b ON b.id = p.board_id AND b.visibility = 'public'
            LEFT JOIN post_embeddings e ON e.post_id = p.id AND e.model = ${c.model.name} AND e.dimensions = ${c.model.dimensions}
            WHERE p.visibility = 'public' ${only}
              AND (e.post_id IS NULL OR (
                e.source_hash IS DISTINCT FROM ${sql.literal(sourceHash)}
                AND (e.retry_at IS NULL OR e.retry_at <= ${now}::timestamptz)
                AND (e.lease_until IS NULL OR e.lease_until <= ${now}::timestamptz)))
            -- Never tried first, newest first (the likeliest duplicates), then changed ones, then the
            -- longest-waiting retries: a failing few never starve the rest.
            ORDER BY e.post_id IS NOT NULL, e.retry_at NULLS FIRST, p.created_at DESC, p.id
            LIMIT ${c.limit}
            -- Another worker's claim in flight holds its posts: take the next ones instead of the same.
            FOR NO KEY UPDATE OF p SKIP LOCKED
          ), leased AS (
            INSERT INTO post_embeddings (post_id, model, dimensions, lease_until, lease_token)
            SELECT id, ${c.model.name}, ${c.model.dimensions}, ${iso(c.nowMs + c.leaseMs)}::timestamptz, ${c.token} FROM due
            ON CONFLICT (post_id, model, dimensions) DO UPDATE
              SET lease_until = EXCLUDED.lease_until, lease_token = EXCLUDED.lease_token
              -- Still due as the latest committed row says: a worker that stored or failed it meanwhile wins.
              WHERE (post_embeddings.lease_until IS NULL OR post_embeddings.lease_until <= ${now}::timestamptz)
                AND (post_embeddings.retry_at IS NULL OR post_embeddings.retry_at <= ${now}::timestamptz)
                AND post_embeddings.source_hash IS DISTINCT FROM (SELECT text_hash FROM posts WHERE id = post_embeddings.post_id)
            RETURNING post_id
          )
          SELECT p.id AS "postId", p.title, p.content, ${sql.literal(sourceHash)} AS "sourceHash"
          FROM leased JOIN posts p ON p.id = leased.post_id`
      })

      const store = Effect.fn("EmbeddingRepo.store")(
        (model: Model, token: string, rows: ReadonlyArray<{ readonly post: ClaimedPost; readonly vector: Vector }>) =>
          rows.length === 0 ? Effect.succeed(0) : sql`UPDATE post_embeddings e
            SET embedding = v.embedding::vector, source_hash = v.hash, attempts = 0, retry_at = NULL, last_error = NULL,
              lease_until = NULL, lease_token = NULL, embedded_at = now()
            FROM jsonb_to_recordset(${
            JSON.stringify(rows.map(({ post, vector }) => ({ id: post.postId, hash: post.sourceHash, embedding: vectorLiteral(vector) })))
          }::jsonb) AS v(id text, hash text, embedding text)
            WHERE e.post_id = v.id AND e.model = ${model.name} AND e.dimensions = ${model.dimensions} AND e.lease_token = ${token}
            RETURNING e.post_id`.pipe(Effect.map((updated) => updated.length))
      )

      const fail = Effect.fn("EmbeddingRepo.fail")((f: Failure) =>
        f.postIds.length === 0 ? Effect.void : sql`UPDATE post_embeddings
          SET attempts = attempts + 1, last_error = ${f.error.slice(0, 500)}, lease_until = NULL, lease_token = NULL,
            retry_at = ${iso(f.nowMs)}::timestamptz + least(${f.baseMs}::float8 * power(2, least(attempts, 40)), ${f.maxMs}::float8) * interval '1 millisecond'
          WHERE post_id IN ${sql.in(f.postIds)} AND model = ${f.model.name} AND dimensions = ${f.model.dimensions}
            AND lease_token = ${f.token}`.pipe(Effect.asVoid)
      )

      const release = Effect.fn("EmbeddingRepo.release")((model: Model, token: string) =>
        sql`UPDATE post_embeddings SET lease_until = NULL, lease_token = NULL
          WHERE lease_token = ${token} AND model = ${model.name} AND dimensions = ${model.dimensions}`.pipe(Effect.asVoid)
      )

      /**
       * `query` in a transaction where the HNSW index keeps scanning when the
       * filters (board, visibility, model) drop its nearest rows, instead of
       * answering short.
       */
      const walkingIndex = <A>(client: SqlClient.SqlClient, query: Effect.Effect<A, SqlError.SqlError>) =>
        client.withTransaction(Effect.andThen(client`SET LOCAL hnsw.iterative_scan = relaxed_order`, query))

      const nearest = Effect.fn("EmbeddingRepo.nearest")(function*(model: Model, q: {
        readonly organizationId: string
        readonly boardId: string
        readonly vector: Vector
        readonly limit: number
        readonly exact?: boolean
      }) {
        const m = modelSql(model, "e.")
        const distance = reads.literal(`e.embedding::${m.cast} <=> `)
        const cast = reads.literal(`::${m.cast}`)
        const vector = vectorLiteral(q.vector)
        const rows = reads`SELECT p.id, p.title, p.excerpt, p.slug, (${distance}${vector}${cast})::float8 AS distance
          FROM post_embeddings e
          JOIN posts p ON p.id = e.post_id
          JOIN boards b ON b.id = p.board_id
          WHERE ${reads.literal(m.predicate)} AND e.embedding IS NOT NULL
            AND p.board_id = ${q.boardId} AND p.organization_id = ${q.organizationId} AND p.visibility = 'public'
            AND b.organization_id = ${q.organizationId} AND b.visibility = 'public'`
        // Materialized, the board's rows are all compared: the planner cannot walk the index for them.
        if (q.exact === true) {
          return yield* reads<NearPost>`WITH board AS MATERIALIZED (${rows})
            SELECT * FROM board ORDER BY distance, id LIMIT ${q.limit}`
        }
        return yield* walkingIndex(
          reads,
          reads<NearPost>`SELECT * FROM (${rows} ORDER BY ${distance}${vector}${cast} LIMIT ${q.limit}) nearest ORDER BY distance, id`
        )
      })

      const neighbourDistances = Effect.fn("EmbeddingRepo.neighbourDistances")(function*(model: Model, boardId: string, sample: number) {
        const m = modelSql(model, "e.")
        const posts = sql`SELECT p.id FROM posts p JOIN boards b ON b.id = p.board_id AND b.visibility = 'public'
          WHERE p.board_id = ${boardId} AND p.visibility = 'public'`
        const [count] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM post_embeddings e
          WHERE ${sql.literal(m.predicate)} AND e.embedding IS NOT NULL AND e.post_id IN (${posts})`
        const n = count?.n ?? 0
        if (n < 2) return []
        const vector = sql.literal(`e.embedding::${m.cast}`)
        const copy = sql.literal(copyKey)
        const words = sql.literal(wordsOf("p.lexicon"))
        // A text is drawn unless a text before it is its near-exact copy: one post of each group of copies.
        const first = sql.literal(`NOT EXISTS (SELECT 1 FROM texts u WHERE u.post_id < t.post_id
          AND ${nearCopy({ words: "t.words", n: "t.n" }, { lexicon: "u.words_v", n: "u.n" })})`)
        // Its nearest neighbour is the nearest post that is neither its copy nor its near-exact copy.
        const other = (candidate: { readonly lexicon: string; readonly n?: string }) =>
          sql.literal(nearCopy({ words: "s.words", n: "s.n" }, candidate))
        const rows = n <= exactUpTo
          ? yield* sql<{ d: number }>`WITH board AS MATERIALIZED (
                SELECT post_id, v, copy, words, array_to_tsvector(words) AS words_v, cardinality(words) AS n FROM (
                  SELECT e.post_id, ${vector} AS v, ${copy} AS copy, ${words} AS words FROM post_embeddings e JOIN posts p ON p.id = e.post_id
                  WHERE ${sql.literal(m.predicate)} AND e.embedding IS NOT NULL AND e.post_id IN (${posts})
                  OFFSET 0 -- each post's words are read once, not once per column made of them
                ) b
              ), texts AS (SELECT DISTINCT ON (copy) * FROM board ORDER BY copy, post_id),
              sample AS (SELECT * FROM texts t WHERE ${first} ORDER BY random() LIMIT ${sample})
              -- OFFSET 0: the board is sorted by distance first, and the near-exact test stops at the first post that passes.
              SELECT (SELECT o.d FROM (SELECT (s.v <=> o.v)::float8 AS d, o.words_v, o.n FROM board o WHERE o.copy <> s.copy ORDER BY 1 OFFSET 0) o
                WHERE NOT ${other({ lexicon: "o.words_v", n: "o.n" })} LIMIT 1) AS d FROM sample s`
          : yield* walkingIndex(
            sql,
            sql<{ d: number }>`WITH texts AS MATERIALIZED (
                SELECT post_id, v, copy, words, array_to_tsvector(words) AS words_v, cardinality(words) AS n FROM (
                  SELECT DISTINCT ON (copy) * FROM (
                    SELECT e.post_id, ${vector} AS v, ${copy} AS copy, ${words} AS words FROM post_embeddings e JOIN posts p ON p.id = e.post_id
                    WHERE ${sql.literal(m.predicate)} AND e.embedding IS NOT NULL
                      AND e.post_id IN (SELECT id FROM (${posts}) board ORDER BY random() LIMIT ${sample})
                  ) d ORDER BY copy, post_id
                ) d
              ), sample AS (SELECT * FROM texts t WHERE ${first})
              SELECT (
                SELECT (${vector} <=> s.v)::float8 FROM post_embeddings e JOIN posts p ON p.id = e.post_id
                WHERE ${sql.literal(m.predicate)} AND e.embedding IS NOT NULL AND e.post_id IN (${posts}) AND ${copy} <> s.copy
                  AND NOT ${other({ lexicon: "p.lexicon" })}
                ORDER BY ${vector} <=> s.v LIMIT 1
              ) AS d FROM sample s`
          )
        return rows.flatMap((row) => row.d === null || !Number.isFinite(row.d) ? [] : [row.d]).sort((a, b) => a - b)
      })

      // Not `Effect.fn`: read on every scrape, which makes no span of its own (its statement's is the only one).
      const backlog = (model: Model) =>
        sql<{ posts: number }>`SELECT count(*)::int AS posts FROM posts p
          JOIN boards b ON b.id = p.board_id AND b.visibility = 'public'
          WHERE p.visibility = 'public' AND NOT EXISTS (
            SELECT 1 FROM post_embeddings e WHERE e.post_id = p.id AND e.model = ${model.name} AND e.dimensions = ${model.dimensions}
              AND e.source_hash = p.text_hash)`.pipe(Effect.map((rows) => rows[0]?.posts ?? 0))

      return EmbeddingRepo.of({ ensureIndex, claim, store, release, fail, nearest, neighbourDistances, backlog })
    })
  )
}
