import { Context, Effect, Layer, Schema } from "effect"
import { type SqlError, SqlSchema } from "effect/sql"
import { bodyWeight, tsqueryLiteral } from "../lexicon/lexicon.js"
import { ReadSql } from "../sql/ReadReplica.js"
import { decoded } from "../sql/SqlFailure.js"

/** A ranked post of the board; one row with no post when none matched, for the features at the cap. */
const LexicalRow = Schema.Struct({
  id: Schema.NullOr(Schema.String),
  title: Schema.NullOr(Schema.String),
  excerpt: Schema.NullOr(Schema.String),
  slug: Schema.NullOr(Schema.String),
  /** The IDF-weighted share of the draft's features the post has, in [0, 1]. */
  coverage: Schema.NullOr(Schema.Number),
  /** Indexes of the fetched features that reached the cap. */
  common: Schema.NullOr(Schema.Array(Schema.Number))
})
export type LexicalRow = typeof LexicalRow.Type

/** A draft's search on one board (`LexicalSearch.search`). */
export interface LexicalQuery {
  readonly organizationId: string
  readonly boardId: string
  /** The board's size: its public posts. */
  readonly n: number
  /** A feature in this many posts is too common to rank with. */
  readonly cap: number
  /** The weights of the draft's features known to be common already, which are not fetched. */
  readonly commonTotal: number
  /** Ranked candidates returned. */
  readonly candidates: number
  /** The features to fetch: board-keyed lexemes, with their weights. */
  readonly terms: ReadonlyArray<{ readonly lexeme: string; readonly weight: number }>
}

const Board = Schema.Struct({ organizationId: Schema.String, boardId: Schema.String })
const Count = Schema.Struct({ n: Schema.Number })
const Rows = Schema.Struct({ rows: Schema.Number })
const Lexeme = Schema.Struct({ lexeme: Schema.String })

/**
 * The lexical half of suggestions in SQL (decisions 0008, 0039), beside the
 * vector query (`VectorSearch.ts`): a draft's features ranked on a board, the
 * board's size, and what PostgreSQL's statistics say is common. Reads, on
 * `ReadSql`, the client `SuggestionQueries` runs its transactions on: each
 * statement runs in the caller's transaction.
 */
export class LexicalSearch extends Context.Service<LexicalSearch, {
  /**
   * For the rest of the transaction: postings are read through the GIN
   * index, never by scanning `posts`. The planner cannot see the draft's
   * features (they arrive as one parameter), and on a table it has no
   * fresh statistics for (a first import, a generic plan) it used to scan
   * every post's lexicon once per feature: 120 features by 2,000 posts
   * took seconds of CPU. Through the index a feature costs its postings,
   * whatever the statistics or the plan cache hold.
   */
  readonly indexOnly: Effect.Effect<void, SqlError.SqlError>
  /** For the rest of the transaction, statements are cancelled past `ms`. */
  readonly statementTimeout: (ms: number) => Effect.Effect<void, SqlError.SqlError>
  /** Public posts on a public board of the organization; 0 for any other board. */
  readonly boardSize: (organizationId: string, boardId: string) => Effect.Effect<number, SqlError.SqlError>
  /** The rows of `posts`, by PostgreSQL's estimate. */
  readonly postsEstimate: Effect.Effect<number, SqlError.SqlError>
  /**
   * The lexemes PostgreSQL's statistics of `posts.lexicon` (ANALYZE's most
   * common elements, their share of the rows, and the table's rows) put in
   * `atLeast` posts or more.
   */
  readonly commonLexemes: (atLeast: number) => Effect.Effect<ReadonlyArray<string>, SqlError.SqlError>
  /**
   * One statement: each feature's postings (at most `cap`, through the GIN
   * index), its document frequency from their count, its IDF weight, and
   * the posts ranked by the weights of the features they have (title
   * features count fully, body ones half: `title_lexicon` tells them apart
   * without reading the large `lexicon`). Features at the cap are too
   * common to rank with; they are reported so they are not fetched again.
   * `q` is materialized: each tsquery is parsed once per statement, not
   * once per row it is compared with.
   */
  readonly search: (query: LexicalQuery) => Effect.Effect<ReadonlyArray<LexicalRow>, SqlError.SqlError>
}>()("hearken/LexicalSearch") {
  static readonly layer = Layer.effect(
    LexicalSearch,
    Effect.gen(function*() {
      // Suggestions are reads: on the replica with `DATABASE_READ_URL`.
      const sql = (yield* ReadSql).client

      const indexOnly = sql`SET LOCAL enable_seqscan = off`.pipe(Effect.asVoid)

      const statementTimeout = (ms: number) => sql`SELECT set_config('statement_timeout', ${String(ms)}, true)`.pipe(Effect.asVoid)

      const countBoard = SqlSchema.findAll({
        Request: Board,
        Result: Count,
        execute: ({ boardId, organizationId }) =>
          sql`SELECT count(*)::int AS n FROM posts p
          JOIN boards b ON b.id = p.board_id AND b.organization_id = ${organizationId} AND b.visibility = 'public'
          WHERE p.board_id = ${boardId} AND p.visibility = 'public'`
      })
      const boardSize = (organizationId: string, boardId: string) =>
        decoded(countBoard({ organizationId, boardId })).pipe(Effect.map((rows) => rows[0]?.n ?? 0))

      const estimate = SqlSchema.findAll({
        Request: Schema.Void,
        Result: Rows,
        execute: () => sql`SELECT greatest(reltuples, 0)::float8 AS rows FROM pg_class WHERE oid = to_regclass('posts')`
      })
      const postsEstimate = decoded(estimate(undefined)).pipe(Effect.map((rows) => rows[0]?.rows ?? 0))

      const statistics = SqlSchema.findAll({
        Request: Schema.Number,
        Result: Lexeme,
        execute: (atLeast) =>
          sql`SELECT e.lexeme FROM pg_stats s
          JOIN pg_class c ON c.oid = to_regclass('posts')
          CROSS JOIN LATERAL unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) AS e(lexeme, freq)
          WHERE s.schemaname = current_schema() AND s.tablename = 'posts' AND s.attname = 'lexicon'
            AND e.lexeme IS NOT NULL AND e.freq * (1 - s.null_frac) * greatest(c.reltuples, 0) >= ${atLeast}`
      })
      const commonLexemes = (atLeast: number) => decoded(statistics(atLeast)).pipe(Effect.map((rows) => rows.map((row) => row.lexeme)))

      const ranked = SqlSchema.findAll({
        Request: Schema.Struct({
          board: Board,
          n: Schema.Number,
          cap: Schema.Number,
          commonTotal: Schema.Number,
          candidates: Schema.Number,
          terms: Schema.Array(Schema.Struct({ lexeme: Schema.String, weight: Schema.Number }))
        }),
        Result: LexicalRow,
        execute: ({ board: { boardId, organizationId }, candidates, cap, commonTotal, n, terms }) =>
          sql`WITH q AS MATERIALIZED (
            SELECT idx, tsq::tsquery AS tsq, weight FROM jsonb_to_recordset(${
            JSON.stringify(terms.map(({ lexeme, weight }, idx) => ({ idx, tsq: tsqueryLiteral(lexeme), weight })))
          }::jsonb) AS q(idx int, tsq text, weight float8)
          ), posting AS (
            SELECT q.idx, m.id, m.in_title
            FROM q CROSS JOIN LATERAL (
              SELECT p.id, p.title_lexicon @@ q.tsq AS in_title FROM posts p
              WHERE p.lexicon @@ q.tsq
              LIMIT ${cap}
            ) m
          ), feature AS (
            SELECT q.idx, count(posting.id) AS df,
              q.weight * ln(1 + (${n} - least(count(posting.id), ${n}) + 0.5) / (least(count(posting.id), ${n}) + 0.5)) AS w
            FROM q LEFT JOIN posting ON posting.idx = q.idx
            GROUP BY q.idx, q.weight
          ), total AS (
            SELECT sum(w) + ${commonTotal} AS total, array_agg(idx) FILTER (WHERE df >= ${cap}) AS common FROM feature
          ), hit AS (
            SELECT posting.id, sum(feature.w * CASE WHEN posting.in_title THEN 1 ELSE ${bodyWeight} END) AS score
            FROM posting JOIN feature ON feature.idx = posting.idx AND feature.df < ${cap}
            GROUP BY posting.id
            ORDER BY score DESC, posting.id
            LIMIT ${candidates}
          ), ranked AS (
            SELECT p.id, p.title, p.excerpt, p.slug, hit.score, p.created_at
            FROM hit JOIN posts p ON p.id = hit.id
            JOIN boards b ON b.id = p.board_id AND b.organization_id = ${organizationId} AND b.visibility = 'public'
            WHERE p.board_id = ${boardId} AND p.organization_id = ${organizationId} AND p.visibility = 'public'
          )
          SELECT ranked.id, ranked.title, ranked.excerpt, ranked.slug,
            (ranked.score / NULLIF(total.total, 0))::float8 AS coverage, total.common
          FROM total LEFT JOIN ranked ON true
          ORDER BY ranked.score DESC NULLS LAST, ranked.created_at DESC, ranked.id`
      })
      const search = (query: LexicalQuery) =>
        decoded(ranked({
          board: { organizationId: query.organizationId, boardId: query.boardId },
          n: query.n,
          cap: query.cap,
          commonTotal: query.commonTotal,
          candidates: query.candidates,
          terms: query.terms
        }))

      return LexicalSearch.of({ indexOnly, statementTimeout, boardSize, postsEstimate, commonLexemes, search })
    })
  )
}
