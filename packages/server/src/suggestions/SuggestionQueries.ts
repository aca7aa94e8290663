import { Context, Effect, Layer, Semaphore } from "effect"
import type { SqlError } from "effect/sql"
import { ServerConfig } from "../config.js"
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

/**
 * The way every suggestion statement goes. One call is one transaction on
 * one connection, within the suggestions' share of the pool, and its
 * statements are cancelled past `SUGGESTIONS_STATEMENT_TIMEOUT_MS`: a
 * suggestion never holds a connection longer than that, and a call waiting
 * for its turn holds none. Past the share, suggestions queue among
 * themselves and nothing else waits for them.
 */
export class SuggestionQueries extends Context.Service<SuggestionQueries, {
  readonly run: <A, E, R>(statements: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError.SqlError, R>
}>()("hearken/SuggestionQueries") {
  static readonly layer = Layer.effect(
    SuggestionQueries,
    Effect.gen(function*() {
      const config = yield* ServerConfig
      // Suggestions are reads: on the replica with `DATABASE_READ_URL`, whose pool is as large.
      const sql = (yield* ReadSql).client
      const semaphore = yield* Semaphore.make(permitsOf(poolSize(config)))
      const timeoutMs = Math.min(config.suggestionsStatementTimeoutMs, config.databaseStatementTimeoutMs)
      const limit = sql`SELECT set_config('statement_timeout', ${String(timeoutMs)}, true)`
      return SuggestionQueries.of({
        run: (statements) => semaphore.withPermits(1)(sql.withTransaction(Effect.andThen(limit, statements)))
      })
    })
  )
}
