import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Metric, Option, Redacted, Schedule, type Scope } from "effect"
import { Reactivity } from "effect/reactivity"
import { SqlClient, type SqlConnection, type SqlError } from "effect/sql"
import { ServerConfig } from "../config.js"
import { labelled } from "../observability/Metrics.js"
import { clientOn, commit } from "./Database.js"

/** The server a read ran on. */
export type ReadTarget = "replica" | "primary"

/** While the replica is down, it is asked this often whether it answers again. */
export const probeInterval = "1 second"

/** How far the replica's replay is behind what it has received from the primary. */
export interface ReplicaLag {
  readonly seconds: number
  readonly bytes: number
}

export interface Replica {
  /** Whether reads go to the replica now (else to the primary, until it answers again). */
  readonly up: Effect.Effect<boolean>
  /** Its lag, read on it; none when it cannot be read, and it is then taken as down. */
  readonly lag: Effect.Effect<Option.Option<ReplicaLag>>
}

/**
 * The client of the reads that need not see their own writes: `/boards`,
 * `/updates` and suggestions (docs/operations.md: "A read replica"). With
 * `DATABASE_READ_URL` their statements go to that streaming replica, and to
 * the primary (`DATABASE_URL`) while it cannot be reached; without it, this
 * is the primary's client itself. Everything else (writes, idempotency, what
 * reads its own writes) uses `SqlClient.SqlClient`, the primary's.
 */
export class ReadSql extends Context.Service<ReadSql, {
  readonly client: SqlClient.SqlClient
  /**
   * For reads whose later statements must not see an older database than
   * their first (an answer's version, then its body, `caching/PublicAnswers.ts`):
   * a function that runs an effect's reads on the server the first of them
   * went to. They may move from the replica to the primary (newer) when the
   * replica fails, never from the primary back to a lagging replica.
   */
  readonly oneServer: Effect.Effect<<A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>>
  /** The replica, with `DATABASE_READ_URL`. */
  readonly replica: Option.Option<Replica>
}>()("hearken/ReadSql") {}

/** The server one run of reads (`ReadSql.oneServer`) has used so far. */
class Pinned extends Context.Service<Pinned, { target: ReadTarget | undefined }>()("hearken/ReadSql/Pinned") {}

const reads = (attributes: Record<string, string>) =>
  Metric.counter("hearken_db_reads_total", {
    description: "Statements and transactions of the reads (/boards, /updates, suggestions), by the server that ran them: replica, or primary (while the replica is down)",
    incremental: true,
    attributes
  })
const readsOn = labelled(reads)

/**
 * The replica's lag, on the replica: 0 when it has replayed all it received
 * (an idle primary sends nothing, and `now() - pg_last_xact_replay_timestamp()`
 * would grow although nothing is missing); else the age of the last
 * transaction it replayed, an upper bound (the primary may have been idle
 * before the writes it has not replayed yet). On a server that is not in
 * recovery both are 0.
 */
const lagOf = (sql: SqlClient.SqlClient) =>
  sql<ReplicaLag>`SELECT
      greatest(coalesce(pg_wal_lsn_diff(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn()), 0), 0)::float8 AS bytes,
      CASE WHEN coalesce(pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn(), false)
        THEN greatest(coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0), 0)
        ELSE 0 END::float8 AS seconds`.pipe(Effect.map(([row]) => ({ seconds: row?.seconds ?? 0, bytes: row?.bytes ?? 0 })))

const hostOf = (url: Redacted.Redacted) => {
  try {
    const parsed = new URL(Redacted.value(url))
    return `${decodeURIComponent(parsed.hostname)}${parsed.port === "" ? "" : `:${parsed.port}`}`
  } catch {
    return "DATABASE_READ_URL"
  }
}

/**
 * The reads' client on `replica`, falling back to `primary`. Each statement
 * (or transaction) takes a connection of the replica's pool while it is up;
 * one that cannot be had marks it down, with one log line saying why, and
 * the statement runs on the primary. While down, reads go to the primary
 * and the replica is probed every `probeInterval`; the first answer brings
 * the reads back, with one line.
 */
const routing = Effect.fnUntraced(function*(primary: SqlClient.SqlClient, replica: SqlClient.SqlClient, name: string) {
  let up = true
  const down = (error: SqlError.SqlError) =>
    Effect.suspend(() => {
      if (!up) return Effect.void
      up = false
      return Effect.logWarning(`Read replica ${name} unavailable (${error.message}): reads go to the primary until it answers again`)
    })
  /** A connection had from `target`: counted, and the run it is pinned to (if any) is on `target` now. */
  const counted = (target: ReadTarget, pinned: Option.Option<Pinned["Service"]>) =>
  <E, R>(connection: Effect.Effect<SqlConnection.Connection, E, R>) =>
    Effect.tap(connection, () =>
      Effect.andThen(
        Effect.sync(() => Option.map(pinned, (p) => (p.target = target))),
        Metric.update(readsOn({ target }), 1)
      ))
  const onPrimary = (pinned: Option.Option<Pinned["Service"]>) => primary.reserve.pipe(counted("primary", pinned))
  const acquire: Effect.Effect<SqlConnection.Connection, SqlError.SqlError, Scope.Scope> = Effect.flatMap(
    Effect.serviceOption(Pinned),
    (pinned) =>
      !up || (Option.isSome(pinned) && pinned.value.target === "primary")
        ? onPrimary(pinned)
        : replica.reserve.pipe(
          counted("replica", pinned),
          Effect.catch((error) => Effect.andThen(down(error), onPrimary(pinned)))
        )
  )

  const probe = Effect.suspend(() =>
    up ? Effect.void : replica`SELECT 1`.pipe(
      Effect.andThen(Effect.suspend(() => {
        if (up) return Effect.void
        up = true
        return Effect.logInfo(`Read replica ${name} answers again: reads go to it`)
      })),
      Effect.ignore
    )
  )
  yield* Effect.forkScoped(Effect.repeat(probe, Schedule.spaced(probeInterval)))
  for (const target of ["replica", "primary"] as const) yield* Metric.update(readsOn({ target }), 0)

  const client = yield* SqlClient.make({
    driver: "pg",
    acquirer: acquire,
    transactionAcquirer: acquire,
    prepareTransactionControls: true,
    commit,
    releaseSavepoint: (savepoint) => `RELEASE SAVEPOINT ${savepoint}`,
    compiler: PgClient.makeCompiler(),
    spanAttributes: [["db.system.name", "postgresql"], ["server.address", name]]
  })
  const replicaSide: Replica = {
    up: Effect.sync(() => up),
    lag: lagOf(replica).pipe(
      Effect.map(Option.some),
      Effect.catch((error) => Effect.as(down(error), Option.none()))
    )
  }
  return ReadSql.of({
    client,
    oneServer: Effect.sync(() => {
      const pinned = Pinned.of({ target: undefined })
      return <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provideService(effect, Pinned, pinned)
    }),
    replica: Option.some(replicaSide)
  })
})

/** Runs each effect as it is: one server, the primary, serves every read. */
const asItIs = Effect.succeed(<A, E, R>(effect: Effect.Effect<A, E, R>) => effect)

/** `ReadSql`: the replica's, falling back to the primary's, with `DATABASE_READ_URL` (and `DATABASE_URL`); else the primary's. */
export const layer = Layer.effect(
  ReadSql,
  Effect.gen(function*() {
    const config = yield* ServerConfig
    const primary = yield* SqlClient.SqlClient
    if (Option.isNone(config.databaseUrl) || Option.isNone(config.databaseReadUrl)) {
      return ReadSql.of({ client: primary, oneServer: asItIs, replica: Option.none() })
    }
    // Its pool opens connections when reads ask for them: a replica that is down at start-up does not stop the server.
    const replica = yield* clientOn(config, config.databaseReadUrl.value)
    return yield* routing(primary, replica, hostOf(config.databaseReadUrl.value))
  })
).pipe(Layer.provide(Reactivity.layer))
