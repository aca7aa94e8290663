import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, type SqlError, SqlSchema } from "effect/sql"
import { Model, modelSql, type Vector, vectorLiteral } from "../embeddings/Vectors.js"
import { storedKindAt, wordKinds } from "../lexicon/lexicon.js"
import { ReadSql } from "../sql/ReadReplica.js"
import { decoded } from "../sql/SqlFailure.js"

const NearPost = Schema.Struct({
  id: Schema.String,
  title: Schema.String,
  excerpt: Schema.String,
  slug: Schema.String,
  /** Cosine distance, 0 (same direction) to 2. */
  distance: Schema.Number
})
export type NearPost = typeof NearPost.Type

const Count = Schema.Struct({ n: Schema.Number })
const Distance = Schema.Struct({ d: Schema.NullOr(Schema.Number) })

/** Boards of at most this many posts are compared pair by pair when calibrating: 300² distances take milliseconds. */
export const exactUpTo = 300

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

/**
 * The vector queries of `post_embeddings` (decisions 0009, 0023, 0027): a
 * draft's nearest posts, beside the lexical search (`LexicalSearch.ts`), and
 * a board's background for the calibrator.
 */
export class VectorSearch extends Context.Service<VectorSearch, {
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
}>()("hearken/VectorSearch") {
  static readonly layer = Layer.effect(
    VectorSearch,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      // `nearest` is a suggestion's read (`ReadSql`); the calibrator's reads are on the primary.
      const reads = (yield* ReadSql).client

      /**
       * `query` in a transaction where the HNSW index keeps scanning when the
       * filters (board, visibility, model) drop its nearest rows, instead of
       * answering short.
       */
      const walkingIndex = <A, E>(client: SqlClient.SqlClient, query: Effect.Effect<A, E>) =>
        client.withTransaction(Effect.andThen(client`SET LOCAL hnsw.iterative_scan = relaxed_order`, query))

      const nearPosts = SqlSchema.findAll({
        Request: Schema.Struct({
          model: Model,
          organizationId: Schema.String,
          boardId: Schema.String,
          /** pgvector's text form (`vectorLiteral`). */
          vector: Schema.String,
          limit: Schema.Number,
          exact: Schema.Boolean
        }),
        Result: NearPost,
        execute: (q) => {
          const m = modelSql(q.model, "e.")
          const distance = reads.literal(`e.embedding::${m.cast} <=> `)
          const cast = reads.literal(`::${m.cast}`)
          const rows = reads`SELECT p.id, p.title, p.excerpt, p.slug, (${distance}${q.vector}${cast})::float8 AS distance
          FROM post_embeddings e
          JOIN posts p ON p.id = e.post_id
          JOIN boards b ON b.id = p.board_id
          WHERE ${reads.literal(m.predicate)} AND e.embedding IS NOT NULL
            AND p.board_id = ${q.boardId} AND p.organization_id = ${q.organizationId} AND p.visibility = 'public'
            AND b.organization_id = ${q.organizationId} AND b.visibility = 'public'`
          // Materialized, the board's rows are all compared: the planner cannot walk the index for them.
          if (q.exact) {
            return reads`WITH board AS MATERIALIZED (${rows})
            SELECT * FROM board ORDER BY distance, id LIMIT ${q.limit}`
          }
          return walkingIndex(
            reads,
            reads`SELECT * FROM (${rows} ORDER BY ${distance}${q.vector}${cast} LIMIT ${q.limit}) nearest ORDER BY distance, id`
          )
        }
      })

      const nearest = Effect.fn("VectorSearch.nearest")((model: Model, q: {
        readonly organizationId: string
        readonly boardId: string
        readonly vector: Vector
        readonly limit: number
        readonly exact?: boolean
      }) =>
        decoded(nearPosts({
          model,
          organizationId: q.organizationId,
          boardId: q.boardId,
          vector: vectorLiteral(q.vector),
          limit: q.limit,
          exact: q.exact === true
        }))
      )

      const Board = Schema.Struct({ model: Model, boardId: Schema.String })
      /** The board's public posts (a subquery). */
      const postsOf = (boardId: string) =>
        sql`SELECT p.id FROM posts p JOIN boards b ON b.id = p.board_id AND b.visibility = 'public'
          WHERE p.board_id = ${boardId} AND p.visibility = 'public'`

      const embedded = SqlSchema.findAll({
        Request: Board,
        Result: Count,
        execute: ({ boardId, model }) =>
          sql`SELECT count(*)::int AS n FROM post_embeddings e
          WHERE ${sql.literal(modelSql(model, "e.").predicate)} AND e.embedding IS NOT NULL AND e.post_id IN (${postsOf(boardId)})`
      })

      const distances = SqlSchema.findAll({
        Request: Schema.Struct({ board: Board, sample: Schema.Number, exact: Schema.Boolean }),
        Result: Distance,
        execute: ({ board: { boardId, model }, exact, sample }) => {
          const m = modelSql(model, "e.")
          const posts = postsOf(boardId)
          const vector = sql.literal(`e.embedding::${m.cast}`)
          const copy = sql.literal(copyKey)
          const words = sql.literal(wordsOf("p.lexicon"))
          // A text is drawn unless a text before it is its near-exact copy: one post of each group of copies.
          const first = sql.literal(`NOT EXISTS (SELECT 1 FROM texts u WHERE u.post_id < t.post_id
          AND ${nearCopy({ words: "t.words", n: "t.n" }, { lexicon: "u.words_v", n: "u.n" })})`)
          // Its nearest neighbour is the nearest post that is neither its copy nor its near-exact copy.
          const other = (candidate: { readonly lexicon: string; readonly n?: string }) =>
            sql.literal(nearCopy({ words: "s.words", n: "s.n" }, candidate))
          return exact
            ? sql`WITH board AS MATERIALIZED (
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
            : walkingIndex(
              sql,
              sql`WITH texts AS MATERIALIZED (
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
        }
      })

      const neighbourDistances = Effect.fn("VectorSearch.neighbourDistances")(function*(model: Model, boardId: string, sample: number) {
        const [count] = yield* embedded({ model, boardId })
        const n = count?.n ?? 0
        if (n < 2) return []
        const rows = yield* distances({ board: { model, boardId }, sample, exact: n <= exactUpTo })
        return rows.flatMap((row) => row.d === null || !Number.isFinite(row.d) ? [] : [row.d]).sort((a, b) => a - b)
      }, decoded)

      return VectorSearch.of({ nearest, neighbourDistances })
    })
  )
}
