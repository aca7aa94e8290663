import { Clock, Context, Effect, Layer, Semaphore } from "effect"
import type { SqlError } from "effect/sql"
import { DatabaseConfig } from "../config/database.js"
import { suggestionsDegradedTo, type SuggestionsDegradedTo } from "../observability/Metrics.js"
import { poolSize } from "../sql/Database.js"
import { ReadSql } from "../sql/ReadReplica.js"

/**
 * The share of the pool's connections suggestions may hold at once. They are
 * the one endpoint whose cost a visitor's text drives, and the widget asks
 * for them on every pause in typing: a flood of them must leave connections
 * for `/health`, the reads, new posts and the workers (4 of 10 leaves 6).
 */
export const poolShare = 0.4

/** The suggestions' share of a pool of `connections`: at least one. */
export const permitsOf = (connections: number) => Math.max(1, Math.floor(connections * poolShare))

/** A statement cancelled past its timeout (SQLSTATE 57014, or Hearken's own limit behind a transaction-mode pooler). */
export const isTimeout = (error: SqlError.SqlError) => error.reason._tag === "StatementTimeoutError"

/** The give-way line is logged at most this often; every answer that gives way is counted. */
export const gaveWayLogMs = 60_000

const halfOf: Record<SuggestionsDegradedTo, string> = {
  lexical: "the semantic half's statement was cancelled, and the answer was the lexical half's alone",
  none: "the lexical half's statement was cancelled, and the answer was []"
}

/**
 * Counts an answer that gave way to a cheaper half (decision 0039) in
 * `hearken_suggestions_degraded_total`, and logs it at most once every
 * `gaveWayLogMs` (by `Clock`), with how many gave way since the last line: a
 * board too large for its timeout would otherwise log on every keystroke.
 */
export const gaveWayLog = (timeoutMs: number) =>
  Effect.sync(() => {
    let loggedAt = -Infinity
    const since: Record<SuggestionsDegradedTo, number> = { lexical: 0, none: 0 }
    return (to: SuggestionsDegradedTo) =>
      Effect.andThen(
        suggestionsDegradedTo(to),
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          since[to]++
          if (now - loggedAt < gaveWayLogMs) return Effect.void
          loggedAt = now
          const line = `Suggestions gave way: a statement ran past the suggestions' statement timeout (${timeoutMs} ms); ${halfOf[to]}. ` +
            `Since the last such line: ${since.lexical} lexical only, ${since.none} []. ` +
            "They are counted in hearken_suggestions_degraded_total; this is logged at most once a minute."
          since.lexical = 0
          since.none = 0
          return Effect.logWarning(line)
        })
      )
  })

/**
 * The way every suggestion statement goes. One call is one transaction on
 * one connection, within the suggestions' share of the pool, and its
 * statements are cancelled past `SUGGESTIONS_STATEMENT_TIMEOUT_MS`: a
 * suggestion never holds a connection longer than that, and a call waiting
 * for its turn holds none. Past the share, suggestions queue among
 * themselves and nothing else waits for them. A statement cancelled at the
 * timeout ends its own transaction and no other: each half of an answer
 * runs its own, so the other half goes on, and the answer gives way to what
 * is left (`gaveWay`, decision 0039).
 */
export class SuggestionQueries extends Context.Service<SuggestionQueries, {
  readonly run: <A, E, R>(statements: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError.SqlError, R>
  /** An answer gave way to `to`: counted, and logged at most once a minute (`gaveWayLog`). */
  readonly gaveWay: (to: SuggestionsDegradedTo) => Effect.Effect<void>
}>()("hearken/SuggestionQueries") {
  static readonly layer = Layer.effect(
    SuggestionQueries,
    Effect.gen(function*() {
      const config = yield* DatabaseConfig
      // Suggestions are reads: on the replica with `DATABASE_READ_URL`, whose pool is as large.
      const sql = (yield* ReadSql).client
      const semaphore = yield* Semaphore.make(permitsOf(poolSize(config)))
      const timeoutMs = Math.min(config.suggestionsStatementTimeoutMs, config.databaseStatementTimeoutMs)
      const limit = sql`SELECT set_config('statement_timeout', ${String(timeoutMs)}, true)`
      const gaveWay = yield* gaveWayLog(timeoutMs)
      return SuggestionQueries.of({
        run: (statements) => semaphore.withPermits(1)(sql.withTransaction(Effect.andThen(limit, statements))),
        gaveWay
      })
    })
  )
}
