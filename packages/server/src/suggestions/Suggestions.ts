import { Limits, SuggestionMatch, type SuggestionsRequest } from "@hearken/api/effect"
import { Cause, Clock, Context, Effect, Fiber, Layer, Option } from "effect"
import * as BoundedCache from "../caching/BoundedCache.js"
import { DatabaseConfig } from "../config/database.js"
import { EmbeddingsConfig } from "../config/embeddings.js"
import { Sanitizer } from "../content/Sanitizer.js"
import { merge, nearLimit } from "./blend.js"
import { boardKey, bodyWeight, queryFeatures, tsqueryLiteral } from "../lexicon/lexicon.js"
import { ReadSql } from "../sql/ReadReplica.js"
import { Semantic } from "./Semantic.js"
import { isTimeout, SuggestionQueries } from "./SuggestionQueries.js"

/** The most posts one answer suggests. */
export const maxSuggestions = Limits.suggestions

/**
 * Which ranked candidates are worth showing (decision 0031, refitting 0008).
 * A draft is answered when its best candidate covers much of it, or stands
 * out from the candidate at rank `against`: a topic with two, three or four
 * posts sits close together at the top, and the rank behind them is where
 * the board's ordinary matches begin. A draft with no duplicate matches many
 * posts a little, and gets nothing. Then every candidate of the top five
 * that covers enough, and is near the best, is shown.
 */
export interface Selection {
  /** A candidate covering this share of the draft's information is shown. */
  readonly confident: number
  /** No candidate under this is shown. */
  readonly floor: number
  /** The draft is answered when its best candidate covers this many times what the candidate at rank `against` does. */
  readonly standOut: number
  /** The rank (from 1) of the candidate the best is compared with; a board with fewer candidates compares with 0. */
  readonly against: number
  /** Once the draft is answered, the next are shown down to this share of the best's coverage… */
  readonly follow: number
  /** …and above this many times the coverage at rank `against`. */
  readonly above: number
  /**
   * A board that gives fewer candidates than this (a small board, or a draft
   * of rare words) uses `fewFloor` instead of `floor`: with few posts, a weak
   * match has fewer others to be confused with (decision 0031).
   */
  readonly few: number
  readonly fewFloor: number
}

export const selection: Selection = { confident: 0.3, floor: 0.12, standOut: 1.5, against: 5, follow: 0.5, above: 1.25, few: 10, fewFloor: 0.1 }

export const select = <A extends { readonly coverage: number }>(ranked: ReadonlyArray<A>, s: Selection = selection): ReadonlyArray<A> => {
  const best = ranked[0]
  const floor = ranked.length < s.few ? s.fewFloor : s.floor
  if (best === undefined || best.coverage < floor) return []
  const reference = ranked[s.against - 1]?.coverage ?? 0
  const answered = best.coverage >= s.confident || best.coverage >= s.standOut * reference
  if (!answered) return []
  return ranked.filter((r, i) =>
    i === 0 ||
    (r.coverage >= floor && (r.coverage >= s.confident || (r.coverage >= s.follow * best.coverage && r.coverage >= s.above * reference)))
  )
}

/** The search's knobs (decision 0008). */
export const tuning = {
  /**
   * A feature in this many posts is too common to fetch: it is left out of the
   * ranking and remembered. Bounds the postings one feature costs, whatever
   * the board's size; on a large board, common but meaningful words drop out
   * and a draft's rarer words carry the match (decision 0008).
   */
  common: 100,
  /** Features of one draft considered, title first. */
  maxFeatures: 120,
  /** Ranked candidates the threshold is applied to. */
  candidates: 25
} as const

/** Boards this large have their size cached for a minute; smaller ones are counted every time (cheap, and exact). */
const cacheBoardsFrom = 1_000
const cacheMs = 60_000
/**
 * A large board's last known size is kept this long: a draft whose count runs
 * past the suggestions' limit uses it while the board is counted again in the
 * background (a day: a board's size drifts slowly, and the IDF weights with it).
 */
const knownSizeMs = 24 * 60 * cacheMs
/** A feature found too common is not fetched again for this long. */
const commonMs = 10 * cacheMs
/** Each of the two caches below: at most this many entries and bytes, keys included (decision 0025). */
const cacheEntries = 100_000
const cacheBytes = 8 * 1024 * 1024

export interface Ranked {
  readonly match: SuggestionMatch
  /** The IDF-weighted share of the draft's features the post has, in [0, 1]. */
  readonly coverage: number
}

const idf = (n: number, df: number) => Math.log(1 + (n - df + 0.5) / (df + 0.5))

interface Row {
  readonly id: string | null
  readonly title: string | null
  readonly excerpt: string | null
  readonly slug: string | null
  readonly coverage: number | null
  /** Indexes of the fetched features that reached the cap. */
  readonly common: ReadonlyArray<number> | null
}

export class Suggestions extends Context.Service<Suggestions, {
  /**
   * What the widget shows (`POST /suggestions`, docs/api.md: "Routes"): the
   * lexical matches, merged with the nearest posts by meaning that stand out
   * on the board (decision 0023); the lexical matches alone when embeddings
   * are not configured, fail, time out or find nothing that stands out;
   * `[]` when a statement of the lexical half runs past the suggestions'
   * statement timeout (decision 0039), but for a large board's count, which
   * gives way to the board's last known size.
   */
  readonly suggest: (request: SuggestionsRequest) => Effect.Effect<ReadonlyArray<SuggestionMatch>>
  /** The lexical answer alone (decision 0008). */
  readonly lexical: (request: SuggestionsRequest) => Effect.Effect<ReadonlyArray<SuggestionMatch>>
  /** Every candidate with its coverage, best first, before the threshold: for tuning and the quality report. */
  readonly rank: (request: SuggestionsRequest) => Effect.Effect<ReadonlyArray<Ranked>>
}>()("hearken/Suggestions") {
  /** Needs `Semantic` and the `SuggestionQueries`. */
  static readonly layerNoDeps = Layer.effect(
    Suggestions,
    Effect.gen(function*() {
      const sql = (yield* ReadSql).client
      const database = yield* DatabaseConfig
      const { suggestionsMaxDistance } = yield* EmbeddingsConfig
      const sanitizer = yield* Sanitizer
      const semantic = yield* Semantic
      const queries = yield* SuggestionQueries
      /** Lexemes known to be in at least `cap` posts: not fetched again for a while. */
      const common = yield* BoundedCache.make<true>({ maxEntries: cacheEntries, maxBytes: cacheBytes, timeToLive: commonMs, sizeOf: () => 0 })
      /** Sizes of large boards; only a board with public posts is ever kept. */
      const sizes = yield* BoundedCache.make<number>({ maxEntries: cacheEntries, maxBytes: cacheBytes, timeToLive: cacheMs, sizeOf: () => 8 })
      /** The same sizes, kept for `knownSizeMs`: the last known size of a board whose count runs past the suggestions' limit. */
      const knownSizes = yield* BoundedCache.make<number>({ maxEntries: cacheEntries, maxBytes: cacheBytes, timeToLive: knownSizeMs, sizeOf: () => 8 })
      /** Boards whose count in the background failed within `cacheMs`: not counted in the background again until then. */
      const countFailed = yield* BoundedCache.make<true>({ maxEntries: cacheEntries, maxBytes: cacheBytes, timeToLive: cacheMs, sizeOf: () => 0 })

      /** Public posts on a public board of the organization; 0 for any other board. */
      const sizeKey = (organizationId: string, boardId: string) => `${organizationId}\u0000${boardId}`
      const boardSize = Effect.fnUntraced(function*(organizationId: string, boardId: string) {
        const key = sizeKey(organizationId, boardId)
        const cached = yield* sizes.get(key)
        if (Option.isSome(cached)) return cached.value
        const [row] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM posts p
          JOIN boards b ON b.id = p.board_id AND b.organization_id = ${organizationId} AND b.visibility = 'public'
          WHERE p.board_id = ${boardId} AND p.visibility = 'public'`
        const n = row?.n ?? 0
        if (n >= cacheBoardsFrom) {
          yield* sizes.set(key, n)
          yield* knownSizes.set(key, n)
        } else yield* knownSizes.delete(key)
        return n
      })

      /**
       * For the rest of the transaction: postings are read through the GIN
       * index, never by scanning `posts`. The planner cannot see the draft's
       * features (they arrive as one parameter), and on a table it has no
       * fresh statistics for (a first import, a generic plan) it used to scan
       * every post's lexicon once per feature: 120 features by 2,000 posts
       * took seconds of CPU. Through the index a feature costs its postings,
       * whatever the statistics or the plan cache hold.
       */
      const indexOnly = sql`SET LOCAL enable_seqscan = off`

      /**
       * Lexemes PostgreSQL's statistics of `posts.lexicon` (ANALYZE's most
       * common elements, their share of the rows, and the table's rows) put in
       * `tuning.common` posts or more: after a restart or an import, a large
       * board's common features are known before any draft fetches them
       * (decision 0039). Lexemes being board-keyed, one list serves every
       * board. It holds at most ten times the column's statistics target
       * (10,000, migration 0017): 100,000 lexemes, about 8 MB, on a database
       * with boards of a million posts, a few on a small one. Reading them
       * takes about 0.1 s at 100,000 (within the database's statement limit,
       * not the suggestions'), so a suggestion never waits for it: the
       * first one after `cacheMs` starts a read in the background, and the
       * list is replaced once it is in; only the first read after start-up is
       * waited for. A failed read keeps the last list.
       */
      let known: ReadonlySet<string> = new Set()
      let knownReadAt = -Infinity
      /** Whether a read has ended (read or failed), and the latest read. */
      let knownOnce = false
      let reading: Fiber.Fiber<void> | undefined
      const scope = yield* Effect.scope
      /** For the reads in the background: the database's limit (`DATABASE_STATEMENT_TIMEOUT_MS`), not the suggestions'. */
      const backgroundLimit = sql`SELECT set_config('statement_timeout', ${String(database.databaseStatementTimeoutMs)}, true)`
      const readKnown = queries.run(
        Effect.andThen(backgroundLimit, sql<{ lexeme: string }>`SELECT e.lexeme FROM pg_stats s
          JOIN pg_class c ON c.oid = to_regclass('posts')
          CROSS JOIN LATERAL unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) AS e(lexeme, freq)
          WHERE s.schemaname = current_schema() AND s.tablename = 'posts' AND s.attname = 'lexicon'
            AND e.lexeme IS NOT NULL AND e.freq * (1 - s.null_frac) * greatest(c.reltuples, 0) >= ${tuning.common}`)
      ).pipe(
        Effect.map((rows) => void (known = new Set(rows.map((row) => row.lexeme)))),
        Effect.catchCause((cause) =>
          Cause.hasInterruptsOnly(cause)
            ? Effect.interrupt
            : Effect.logWarning("Suggestions: could not read the lexicon's statistics; reading them again in a minute", cause)
        ),
        Effect.ensuring(Effect.sync(() => void (knownOnce = true)))
      )
      /** The list; started here, so never inside a suggestion's transaction (a forked fiber would share its connection). */
      const knownCommon = Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        if (now - knownReadAt >= cacheMs) {
          knownReadAt = now
          reading = yield* Effect.forkIn(readKnown, scope)
        }
        // Until a first read has ended, wait for it: without the list, a large board's first drafts fetch every common feature.
        if (!knownOnce && reading !== undefined) yield* Fiber.join(reading)
        return known
      })

      /**
       * A board whose count ran past the suggestions' limit is counted again in
       * the background, within the database's (`DATABASE_STATEMENT_TIMEOUT_MS`),
       * once at a time, and its size cached as usual (a table of fewer posts
       * than `cacheBoardsFrom` has no size to keep): else a board too large to
       * count within the suggestions' limit would never be counted, and every
       * draft on it would give way to `[]` (decision 0039). A count that fails
       * (even the database's limit is too short for the board) is logged, at
       * most once a minute as a warning (else at debug level), and the board is
       * not counted in the background again for `cacheMs`: meanwhile its drafts
       * use its last known size.
       */
      const counting = new Set<string>()
      let countFailureLoggedAt = -Infinity
      const countFailure = (key: string, cause: Cause.Cause<unknown>) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          countFailed.store.set(key, true, now)
          const line = "Suggestions: could not count a large board's posts in the background; its drafts use its last known size " +
            "(or answer [] without one), and it is counted again in a minute"
          if (now - countFailureLoggedAt < cacheMs) return Effect.logDebug(line, cause)
          countFailureLoggedAt = now
          return Effect.logWarning(line, cause)
        })
      /** Whether the board is being counted in the background, or its count there failed within `cacheMs`. */
      const countPending = (key: string, now: number) => counting.has(key) || Option.isSome(countFailed.store.get(key, now))
      const countInBackground = (request: SuggestionsRequest) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const key = sizeKey(request.organizationId, request.boardId)
          if (countPending(key, now)) return Effect.void
          counting.add(key)
          return Effect.andThen(
            Effect.logDebug(`Suggestions: counting board ${request.boardId}'s posts in the background`),
            Effect.asVoid(Effect.forkIn(
              queries.run(Effect.gen(function*() {
                // A table under `cacheBoardsFrom` rows (by PostgreSQL's estimate) has no board whose size is kept: nothing to count for.
                const [table] = yield* sql<{ rows: number }>`SELECT greatest(reltuples, 0)::float8 AS rows FROM pg_class WHERE oid = to_regclass('posts')`
                if ((table?.rows ?? 0) < cacheBoardsFrom) return
                yield* backgroundLimit
                yield* indexOnly
                yield* boardSize(request.organizationId, request.boardId)
              })).pipe(
                Effect.catchCause((cause) => Cause.hasInterruptsOnly(cause) ? Effect.interrupt : countFailure(key, cause)),
                Effect.ensuring(Effect.sync(() => void counting.delete(key)))
              ),
              scope
            ))
          )
        })

      /**
       * The board's size: a large board's from the cache, with no transaction;
       * else counted through the index, in a transaction of its own. A large
       * board whose count runs past the suggestions' limit (or is being counted
       * in the background, or failed to be within `cacheMs`) has its last known
       * size, while the background count refreshes it; without one, the
       * timeout stands (the answer gives way to `[]`).
       */
      const countBoard = (request: SuggestionsRequest) => {
        const key = sizeKey(request.organizationId, request.boardId)
        return Effect.gen(function*() {
          const cached = yield* sizes.get(key)
          if (Option.isSome(cached)) return cached.value
          const now = yield* Clock.currentTimeMillis
          const known = knownSizes.store.get(key, now)
          if (Option.isSome(known) && countPending(key, now)) return known.value
          return yield* queries.run(Effect.andThen(indexOnly, boardSize(request.organizationId, request.boardId))).pipe(
            Effect.catchTag("SqlError", (error) =>
              isTimeout(error)
                ? Effect.andThen(
                  countInBackground(request),
                  Effect.flatMap(knownSizes.get(key), Option.match({ onNone: () => Effect.fail(error), onSome: Effect.succeed }))
                )
                : Effect.fail(error))
          )
        })
      }

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
      const search = (request: SuggestionsRequest, n: number, cap: number, commonTotal: number,
        terms: ReadonlyArray<{ readonly lexeme: string; readonly weight: number }>) =>
        sql<Row>`WITH q AS MATERIALIZED (
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
            LIMIT ${tuning.candidates}
          ), ranked AS (
            SELECT p.id, p.title, p.excerpt, p.slug, hit.score, p.created_at
            FROM hit JOIN posts p ON p.id = hit.id
            JOIN boards b ON b.id = p.board_id AND b.organization_id = ${request.organizationId} AND b.visibility = 'public'
            WHERE p.board_id = ${request.boardId} AND p.organization_id = ${request.organizationId} AND p.visibility = 'public'
          )
          SELECT ranked.id, ranked.title, ranked.excerpt, ranked.slug,
            (ranked.score / NULLIF(total.total, 0))::float8 AS coverage, total.common
          FROM total LEFT JOIN ranked ON true
          ORDER BY ranked.score DESC NULLS LAST, ranked.created_at DESC, ranked.id`

      /** `text`: the draft's content as plain text; `size`, the board's when it was counted already. */
      const rankText = Effect.fnUntraced(function*(request: SuggestionsRequest, text: string, size?: number) {
        const features = queryFeatures(request.title, text).slice(0, tuning.maxFeatures)
        if (features.length === 0) return []
        // Outside the transaction below: a read it starts runs in a transaction of its own.
        const statistics = yield* knownCommon
        // One transaction, one connection of the suggestions' share, for both statements.
        const rows = yield* queries.run(Effect.gen(function*() {
          yield* indexOnly
          const n = size ?? (yield* boardSize(request.organizationId, request.boardId))
          if (n === 0) return []
          const cap = tuning.common
          const key = boardKey(request.boardId)
          const fetch: Array<{ readonly lexeme: string; readonly weight: number }> = []
          let commonTotal = 0
          for (const { feature, weight } of features) {
            const lexeme = `${key}/${feature}`
            if (statistics.has(lexeme) || Option.isSome(yield* common.get(lexeme))) commonTotal += weight * idf(n, Math.min(cap, n))
            else fetch.push({ lexeme, weight })
          }
          if (fetch.length === 0) return []
          const rows = yield* search(request, n, cap, commonTotal, fetch)
          for (const idx of rows[0]?.common ?? []) yield* common.set(fetch[idx]!.lexeme, true)
          return rows
        }))
        return rows.flatMap((row) =>
          row.id === null || row.coverage === null
            ? []
            : [{ match: new SuggestionMatch({ id: row.id, title: row.title!, excerpt: row.excerpt!, slug: row.slug! }), coverage: row.coverage }]
        )
      })

      const rank = Effect.fn("Suggestions.rank")((request: SuggestionsRequest) =>
        Effect.orDie(rankText(request, sanitizer.text(request.content)))
      )

      /** The lexical answer from the ranking. */
      const shownOf = (ranked: ReadonlyArray<Ranked>) => select(ranked).slice(0, maxSuggestions).map((r) => r.match)

      const lexical = Effect.fn("Suggestions.lexical")((request: SuggestionsRequest) =>
        Effect.map(Effect.orDie(rankText(request, sanitizer.text(request.content))), shownOf)
      )

      // The board first, cheaply: an unknown, private or other organization's board costs no embeddings call (decision 0025).
      // Then both halves at once: the answer takes the longer of the two, never their sum.
      const both = Effect.fnUntraced(function*(request: SuggestionsRequest) {
        const size = yield* countBoard(request)
        if (size === 0) return []
        const text = sanitizer.text(request.content)
        const [ranked, meaning] = yield* Effect.all([
          rankText(request, text, size),
          semantic.nearest({ ...request, text, limit: nearLimit })
        ], { concurrency: 2 })
        const shown = shownOf(ranked)
        if (Option.isNone(meaning) || meaning.value.length === 0) return shown
        const matches = new Map(ranked.map((r) => [r.match.id, r.match]))
        for (const post of meaning.value) {
          if (!matches.has(post.id)) matches.set(post.id, new SuggestionMatch({ id: post.id, title: post.title, excerpt: post.excerpt, slug: post.slug }))
        }
        const ids = merge(shown.map((m) => m.id), ranked.map((r) => ({ id: r.match.id, coverage: r.coverage })), meaning.value, maxSuggestions, suggestionsMaxDistance)
        return ids.map((id) => matches.get(id)!)
      })

      /**
       * A statement of the lexical half (the board's size, the search) past
       * the suggestions' timeout gives way to `[]`: it was cancelled and its
       * transaction rolled back, and the semantic half is interrupted; it
       * would cost more. The semantic half's own timeouts give way to the
       * lexical answer (`Semantic.ts`). Either is counted and logged at most
       * once a minute (decision 0039). Any other database failure stays a 500.
       */
      const suggest = Effect.fn("Suggestions.suggest")((request: SuggestionsRequest) =>
        both(request).pipe(
          Effect.catchTag("SqlError", (error) =>
            isTimeout(error) ? Effect.as(queries.gaveWay("none"), []) : Effect.die(error)
          )
        )
      )

      return Suggestions.of({ suggest, lexical, rank })
    })
  )

  static readonly layer = this.layerNoDeps.pipe(Layer.provide(Semantic.layer), Layer.provide(SuggestionQueries.layer))
}
