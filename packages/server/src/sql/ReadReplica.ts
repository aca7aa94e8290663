import { PgClient } from "@effect/sql-pg"
import { Cause, Context, Effect, Exit, Fiber, Layer, Metric, Option, Redacted, Schedule, type Scope } from "effect"
import { Reactivity } from "effect/reactivity"
import { SqlClient, type SqlConnection, SqlError } from "effect/sql"
import { DatabaseConfig } from "../config/database.js"
import { labelled } from "../observability/Metrics.js"
import { clientOn, commit, namedBy } from "./Database.js"

/** The server a read ran on. */
export type ReadTarget = "replica" | "primary"

/** While the replica is down, it is asked this often whether it answers again. */
export const probeInterval = "1 second"

/** How far the replica's replay is behind what it has received from the primary, and whether it still receives. */
export interface ReplicaLag {
  readonly seconds: number
  readonly bytes: number
  /**
   * Whether its WAL receiver is streaming from the primary. A replica that
   * stopped receiving soon replays all it had, and its lag reads 0 while it
   * falls behind: this is what tells.
   */
  readonly streaming: boolean
}

export interface Replica {
  /** Whether reads go to the replica now (else to the primary, until it answers again). */
  readonly up: Effect.Effect<boolean>
  /** Its lag, read on it; none while it is down, or when it cannot be read, and it is then taken as down. */
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
   * their first (an answer's version, then its body, `caching/ConditionalAnswers.ts`):
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
        ELSE 0 END::float8 AS seconds,
      EXISTS (SELECT 1 FROM pg_stat_wal_receiver WHERE status = 'streaming') AS streaming`.pipe(
    Effect.map(([row]) => ({ seconds: row?.seconds ?? 0, bytes: row?.bytes ?? 0, streaming: row?.streaming ?? false }))
  )

/** `host:port` of a URL, for the log lines and the spans (the URL's own values: no credentials). */
const hostOf = (url: Redacted.Redacted) => {
  const { host, port } = namedBy(Redacted.value(url))
  return host === undefined ? "DATABASE_READ_URL" : `${host}${port === undefined ? "" : `:${port}`}`
}

/**
 * Past the statement timeout (`DATABASE_STATEMENT_TIMEOUT_MS`), how long a
 * statement on the replica may still take before the replica is taken for
 * gone: time for PostgreSQL's own cancel (57014) to arrive, or behind a
 * transaction-mode pooler for Hearken's `CancelRequest` to be confirmed.
 * A server that is alive answers well within it; one that is gone (a host
 * lost, a partition, a pooler waiting for a server it cannot reach) never does.
 */
export const deadlineMarginMs = 1000

/**
 * Whether a read that failed on the replica failed for the replica's sake, not
 * its own: the connection (refused, reset, closed, `08xxx`, no answer by the
 * deadline), the server going away or refusing work (class 57 but 57014: admin
 * shutdown, crash, cannot connect now), a recovery conflict (class 40: a hot
 * standby cancels a query whose rows replay must remove), or the server's
 * resources (53, 58). Those reads are run again on the primary. Everything
 * else is the statement's own (22, 23, 42, ...) and would fail there too; and
 * its own statement timeout (57014, `SET LOCAL statement_timeout` included)
 * is an answer the caller handles, not a failure of the replica.
 */
export const replicaFault = (error: SqlError.SqlError): boolean => {
  if (error.reason._tag === "ConnectionError") return true
  const code = (error.reason.cause as { readonly code?: unknown } | undefined)?.code
  if (typeof code !== "string" || code === "57014") return false
  return ["57", "40", "53", "58"].includes(code.slice(0, 2))
}

/**
 * Whether a replica's fault (`replicaFault`) says the replica is gone, and
 * every read should leave it until it answers again: its connection, the
 * server going away or refusing work (57), its resources as a whole (58), a
 * hang past the deadline. A recovery conflict (40) or one query out of memory
 * (53) is that query's bad luck on a healthy standby: the read runs again on
 * the primary, and the others stay on the replica.
 */
export const replicaGone = (error: SqlError.SqlError): boolean => {
  const code = (error.reason.cause as { readonly code?: unknown } | undefined)?.code
  return typeof code !== "string" || !["40", "53"].includes(code.slice(0, 2))
}

/**
 * Runs `statement` in a fiber of its own and waits for it up to `deadlineMs`.
 * Past that it fails with `late()` at once, and the statement is interrupted
 * in the background: the driver's cancel and drain may wait seconds more on a
 * server that does not answer, and the read does not wait for them.
 */
const withDeadline = <A>(deadlineMs: number, statement: Effect.Effect<A, SqlError.SqlError>, late: () => SqlError.SqlError) =>
  Effect.flatMap(Effect.forkDetach(statement), (fiber) =>
    Fiber.join(fiber).pipe(
      Effect.timeoutOrElse({
        duration: deadlineMs,
        orElse: () => Effect.andThen(Effect.forkDetach(Fiber.interrupt(fiber)), Effect.fail(late()))
      }),
      // The caller gone (a visitor hung up): the statement is interrupted as it would be without the fiber.
      Effect.onInterrupt(() => Fiber.interrupt(fiber))
    ))

type TransformRows = (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined

/**
 * A connection of the replica's pool (pinned: `reserve`), each statement
 * bounded by the deadline. The first statement that fails for the replica's
 * sake (`replicaFault`) is kept as `fault`. One past the deadline also
 * abandons the connection: what follows on it (a `ROLLBACK`) fails at once,
 * and releasing the pin with the statement still on the wire closes the
 * session (`PgConnection.pin`), so the pool never hands it out again.
 */
class ReplicaConnection implements SqlConnection.Connection {
  fault: SqlError.SqlError | undefined
  private abandoned: SqlError.SqlError | undefined
  constructor(readonly connection: SqlConnection.Connection, readonly deadlineMs: number) {}

  private bounded<A>(statement: Effect.Effect<A, SqlError.SqlError>): Effect.Effect<A, SqlError.SqlError> {
    return Effect.suspend(() => {
      if (this.abandoned !== undefined) return Effect.fail(this.abandoned)
      return withDeadline(this.deadlineMs, statement, () => {
        this.abandoned = new SqlError.SqlError({
          reason: new SqlError.ConnectionError({
            cause: new Error(`no answer within ${this.deadlineMs} ms`),
            message: `no answer within ${this.deadlineMs} ms (the statement timeout and ${deadlineMarginMs} ms)`,
            operation: "execute"
          })
        })
        return this.abandoned
      }).pipe(Effect.tapError((error) =>
        Effect.sync(() => {
          if (this.fault === undefined && replicaFault(error)) this.fault = error
        })
      ))
    })
  }
  execute(sql: string, params: ReadonlyArray<unknown>, transformRows: TransformRows) {
    return this.bounded(this.connection.execute(sql, params, transformRows))
  }
  executeUnprepared(sql: string, params: ReadonlyArray<unknown>, transformRows: TransformRows) {
    return this.bounded(this.connection.executeUnprepared(sql, params, transformRows))
  }
  executeRaw(sql: string, params: ReadonlyArray<unknown>) {
    return this.bounded(this.connection.executeRaw(sql, params))
  }
  executeValues(sql: string, params: ReadonlyArray<unknown>) {
    return this.bounded(this.connection.executeValues(sql, params))
  }
  executeValuesUnprepared(sql: string, params: ReadonlyArray<unknown>) {
    return this.bounded(this.connection.executeValuesUnprepared(sql, params))
  }
  executeStream(sql: string, params: ReadonlyArray<unknown>, transformRows: TransformRows) {
    // Not used by Hearken; a stream's rows arrive over time, so no deadline bounds the whole.
    return this.connection.executeStream(sql, params, transformRows)
  }
}

/** One top-level transaction of the reads: the replica's connection it got, if any. */
class Attempt extends Context.Service<Attempt, { connection: ReplicaConnection | undefined }>()("hearken/ReadSql/Attempt") {}

/**
 * The reads' client on `replica`, falling back to `primary`. Each statement
 * (or transaction) takes a connection of the replica's pool while it is up;
 * one that cannot be had marks it down, with one log line saying why, and
 * the statement runs on the primary. A statement, or a transaction, that
 * fails on the replica for the replica's sake (`replicaFault`, a hang past
 * `deadlineMs` included) is run again, whole, on the primary, and marks the
 * replica down the same way when it says the replica is gone (`replicaGone`). While down, reads go to the primary and the replica is
 * probed every `probeInterval`; the first answer brings the reads back, with
 * one line.
 */
const routing = Effect.fnUntraced(function*(primary: SqlClient.SqlClient, replica: SqlClient.SqlClient, name: string, deadlineMs: number) {
  let up = true
  const down = (error: SqlError.SqlError) =>
    Effect.suspend(() => {
      if (!up) return Effect.void
      up = false
      return Effect.logWarning(`Read replica ${name} unavailable (${error.message}): reads go to the primary until it answers again`)
    })
  /** A read failed on the replica for the replica's sake: down if the replica is gone, else only this read moves. */
  const failed = (fault: SqlError.SqlError) =>
    replicaGone(fault) ? down(fault) : Effect.logDebug(`Read replica ${name}: a read runs again on the primary (${fault.message})`)
  /** A connection had from `target`: counted, and the run it is pinned to (if any) is on `target` now. */
  const counted = (target: ReadTarget, pinned: Option.Option<Pinned["Service"]>) =>
  <E, R>(connection: Effect.Effect<SqlConnection.Connection, E, R>) =>
    Effect.tap(connection, () =>
      Effect.andThen(
        Effect.sync(() => Option.map(pinned, (p) => (p.target = target))),
        Metric.update(readsOn({ target }), 1)
      ))
  const onPrimary = (pinned: Option.Option<Pinned["Service"]>) => primary.reserve.pipe(counted("primary", pinned))
  const onReplica = Effect.map(replica.reserve, (connection) => new ReplicaConnection(connection, deadlineMs))
  const acquire: Effect.Effect<SqlConnection.Connection, SqlError.SqlError, Scope.Scope> = Effect.flatMap(
    Effect.serviceOption(Pinned),
    (pinned) =>
      !up || (Option.isSome(pinned) && pinned.value.target === "primary")
        ? onPrimary(pinned)
        : onReplica.pipe(
          Effect.tap((connection) =>
            Effect.map(Effect.serviceOption(Attempt), Option.map((attempt) => (attempt.connection = connection)))
          ),
          counted("replica", pinned),
          Effect.catch((error) => Effect.andThen(down(error), onPrimary(pinned)))
        )
  )

  /** `effect` again, on the primary: the run it belongs to (`oneServer`) stays there. */
  const againOnPrimary = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.flatMap(Effect.serviceOption(Pinned), (pinned) => {
      const run = Option.getOrElse(pinned, () => Pinned.of({ target: undefined }))
      run.target = "primary"
      return Effect.provideService(effect, Pinned, run)
    })
  /** Whether `exit` is a failure of the replica's on `connection` (not an interruption from outside): run it again on the primary. */
  const failedOnReplica = (exit: Exit.Exit<unknown, unknown>, connection: ReplicaConnection | undefined) =>
    Exit.isFailure(exit) && !Cause.hasInterrupts(exit.cause) && connection?.fault !== undefined

  /** One statement outside a transaction: on the connection `acquire` gives, released before it runs again on the primary. */
  const borrower: SqlConnection.Borrower = (f) =>
    Effect.flatMap(
      Effect.scoped(Effect.flatMap(acquire, (connection) =>
        Effect.map(Effect.exit(f(connection)), (exit) => ({ exit, connection })))),
      ({ connection, exit }) => {
        if (!(connection instanceof ReplicaConnection) || !failedOnReplica(exit, connection)) return exit
        return Effect.andThen(failed(connection.fault!), againOnPrimary(Effect.scoped(Effect.flatMap(acquire, f))))
      }
    )

  const probe = Effect.suspend(() =>
    up ? Effect.void : Effect.scoped(Effect.flatMap(onReplica, (connection) => connection.executeRaw("SELECT 1", []))).pipe(
      Effect.andThen(Effect.suspend(() => {
        if (up) return Effect.void
        up = true
        return Effect.logInfo(`Read replica ${name} answers again: reads go to it`)
      })),
      // Whatever ends a probe, failure or defect, the next one runs: a loop that died would keep the reads off the replica for good.
      Effect.catchCause((cause) => Effect.logDebug(`Read replica ${name}: probe failed`, cause))
    )
  )
  yield* Effect.forkScoped(Effect.repeat(probe, Schedule.spaced(probeInterval)))
  for (const target of ["replica", "primary"] as const) yield* Metric.update(readsOn({ target }), 0)

  const options = {
    driver: "pg",
    prepareTransactionControls: true,
    commit,
    releaseSavepoint: (savepoint: string) => `RELEASE SAVEPOINT ${savepoint}`,
    compiler: PgClient.makeCompiler(),
    spanAttributes: [["db.system.name", "postgresql"], ["server.address", name]] as const
  }
  const client = yield* SqlClient.make({ ...options, acquirer: acquire, transactionAcquirer: acquire, borrower })
  // A transaction (a suggestion's statements) runs again whole: its first statements went with the replica's session.
  const inTransaction = client.withTransaction
  const withTransaction = <R, E, A>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError.SqlError, R> =>
    Effect.flatMap(Effect.serviceOption(client.transactionService), (open) => {
      if (Option.isSome(open)) return inTransaction(effect)
      const attempt = Attempt.of({ connection: undefined })
      return Effect.flatMap(Effect.exit(Effect.provideService(inTransaction(effect), Attempt, attempt)), (exit) =>
        failedOnReplica(exit, attempt.connection)
          ? Effect.andThen(failed(attempt.connection!.fault!), againOnPrimary(inTransaction(effect)))
          : exit)
    })
  ;(client as { withTransaction: SqlClient.SqlClient["withTransaction"] }).withTransaction = withTransaction

  // The replica alone, each statement within the deadline: its lag.
  const direct = yield* SqlClient.make({ ...options, acquirer: onReplica })
  const replicaSide: Replica = {
    up: Effect.sync(() => up),
    // While down, nothing waits on the replica (a scrape included); the probe tells when it answers again.
    lag: Effect.suspend(() =>
      up
        ? lagOf(direct).pipe(
          Effect.map(Option.some),
          Effect.catch((error) => Effect.as(replicaFault(error) ? failed(error) : Effect.void, Option.none()))
        )
        : Effect.succeedNone
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
    const config = yield* DatabaseConfig
    const primary = yield* SqlClient.SqlClient
    if (Option.isNone(config.databaseUrl) || Option.isNone(config.databaseReadUrl)) {
      return ReadSql.of({ client: primary, oneServer: asItIs, replica: Option.none() })
    }
    // Its pool opens connections when reads ask for them: a replica that is down at start-up does not stop the server.
    const replica = yield* clientOn(config, config.databaseReadUrl.value)
    const deadlineMs = config.databaseStatementTimeoutMs + deadlineMarginMs
    return yield* routing(primary, replica, hostOf(config.databaseReadUrl.value), deadlineMs)
  })
).pipe(Layer.provide(Reactivity.layer))
