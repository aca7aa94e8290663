import { PgClient, type PgConnection, PgPool } from "@effect/sql-pg"
import type { Array as Arr } from "effect"
import { Context, Effect, Layer, Option, Redacted, Schedule, type Scope, Stream } from "effect"
import { Reactivity } from "effect/reactivity"
import { Migrator, SqlClient, SqlError } from "effect/sql"
import type { SqlConnection } from "effect/sql"
import { DatabaseConfig, type DatabaseConfigShape } from "../config/database.js"
import { startEmbedded } from "./Embedded.js"
import { loader } from "./migrations/index.js"

const runMigrations = Migrator.make({})({ loader })

/** A database that cannot be reached or refuses the login: retrying only makes start-up slower to say so. */
const unreachable = (error: unknown) => {
  const reason = (error as { readonly reason?: { readonly _tag?: string } }).reason?._tag
  return reason === "ConnectionError" || reason === "AuthenticationError"
}

/**
 * Runs the migrations; a concurrent first start of another instance may collide once, so retry
 * (but not when the database is unreachable).
 * They run with no statement timeout: a schema change on a large table may
 * rightly take minutes, and nothing is served until they are done.
 */
export const migrate = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // The migrator's own transaction nests in this one (a savepoint), so the setting covers every migration.
  const applied = yield* sql.withTransaction(Effect.andThen(sql`SET LOCAL statement_timeout = 0`, runMigrations))
  // One line at each start (docs/operations.md: "Upgrades"): what this start applied, that there was
  // nothing to apply, or that the database is newer than this version (a rollback of the code).
  if (applied.length > 0) {
    return yield* Effect.logInfo(`Migrations applied: ${applied.map(([id, name]) => migrationName(id, name)).join(", ")}`)
  }
  const known = yield* loader
  const [latest] = yield* sql<{ id: number; name: string }>`SELECT migration_id AS id, name FROM effect_sql_migrations
    ORDER BY migration_id DESC LIMIT 1`
  const newest = Math.max(0, ...known.map(([id]) => id))
  if (latest !== undefined && latest.id > newest) {
    return yield* Effect.logWarning(
      `Database schema is newer than this version: it records ${migrationName(latest.id, latest.name)}, ` +
        `this version knows up to ${migrationName(newest, known.find(([id]) => id === newest)?.[1] ?? "")}; started without migrating`
    )
  }
  yield* Effect.logInfo(`Database schema up to date (${known.length} migrations)`)
}).pipe(
  Effect.retry({ times: 3, schedule: Schedule.spaced("200 millis"), while: (error) => !unreachable(error) })
)

/** As the file is named: `0016_webhook_previous_secrets`. */
const migrationName = (id: number, name: string) => `${String(id).padStart(4, "0")}_${name}`

/** This process's sessions in `pg_stat_activity`: the pool gauges (`sql/DatabaseGauges.ts`) count them there. */
export const applicationName = `hearken ${process.pid}-${Math.random().toString(36).slice(2, 8)}`

/**
 * This process's sessions on PostgreSQL, by `applicationName`: `inUse`
 * (running a statement or in a transaction, the caller's own session not
 * counted) and `idle`. The pool of `@effect/sql-pg` does not expose its
 * counts; PostgreSQL knows them.
 */
export const poolSessions = (sql: SqlClient.SqlClient) =>
  sql<{ inUse: number; idle: number }>`SELECT
      count(*) FILTER (WHERE state <> 'idle' AND pid <> pg_backend_pid())::int AS "inUse",
      count(*) FILTER (WHERE state = 'idle')::int AS idle
    FROM pg_stat_activity WHERE application_name = ${applicationName}`.pipe(
    Effect.map(([row]) => ({ inUse: row?.inUse ?? 0, idle: row?.idle ?? 0 }))
  )

/** Connections in the pool on PostgreSQL. */
export const postgresPoolSize = 10

/**
 * Connections in the pool: PGlite serves exactly one. Suggestions, whose
 * cost a visitor's text drives, get a share of them only
 * (`suggestions/SuggestionQueries.ts`).
 */
export const poolSize = (config: DatabaseConfigShape) => Option.isSome(config.databaseUrl) ? postgresPoolSize : 1

/**
 * What needs a PostgreSQL session of its own, which a transaction-mode pooler
 * (PgBouncer's `pool_mode = transaction`) cannot give: `LISTEN`, and a
 * session setting that outlives one transaction (docs/operations.md: "Behind
 * PgBouncer"). Provided by `layer` with the client.
 */
export class Sessions extends Context.Service<Sessions, {
  /**
   * The client `LISTEN` goes through: none on PGlite (it cannot spare the
   * connection) and behind a transaction-mode pooler without
   * `DATABASE_DIRECT_URL`; the webhook worker polls then.
   */
  readonly listener: Option.Option<PgClient.PgClient>
  /**
   * Runs one statement with no statement timeout: an index build, which
   * takes as long as the table is big and may not run inside a transaction
   * (`CONCURRENTLY`), so `SET LOCAL` cannot scope it.
   */
  readonly unbounded: (statement: string) => Effect.Effect<void, SqlError.SqlError>
}>()("hearken/Sessions") {}

/** On a client with sessions: a connection of its own for the while, its timeout off, then back to the session's default. */
const unboundedOnSession = (sql: SqlClient.SqlClient) => (statement: string) =>
  Effect.gen(function*() {
    const connection = yield* sql.reserve
    yield* connection.executeUnprepared("SET statement_timeout = 0", [], undefined)
    // RESET goes back to the session's default: the limit its startup packet set.
    yield* connection.executeUnprepared(statement, [], undefined).pipe(
      Effect.ensuring(Effect.ignore(connection.executeUnprepared("RESET statement_timeout", [], undefined)))
    )
  }).pipe(Effect.scoped)

/**
 * Behind a transaction-mode pooler, a statement past `timeoutMs` is
 * interrupted: the driver sends PostgreSQL a `CancelRequest` (the pooler
 * passes it to the server session running the statement), waits for the
 * statement to end, and the caller gets the `StatementTimeoutError` a
 * server-side `statement_timeout` gives. PgBouncer refuses `statement_timeout`
 * as a startup parameter, and a session `SET` would stay on whichever server
 * connection ran it, for other clients; so the limit is Hearken's own, per
 * statement, and the statement does not outlive it on the server.
 */
const bounded = <A>(timeoutMs: number, statement: Effect.Effect<A, SqlError.SqlError>) =>
  Effect.timeoutOrElse(statement, {
    duration: timeoutMs,
    orElse: () =>
      Effect.fail(
        new SqlError.SqlError({
          reason: new SqlError.StatementTimeoutError({
            cause: new Error(`statement cancelled after DATABASE_STATEMENT_TIMEOUT_MS (${timeoutMs} ms)`),
            message: `canceling statement due to statement timeout (${timeoutMs} ms, enforced by Hearken behind a transaction-mode pooler)`,
            operation: "execute"
          })
        })
      )
  })

type TransformRows = (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined

/** A pooled session's statements, unprepared (PgBouncer 1.18 in transaction mode keeps no named statement) and bounded. */
class BoundedConnection implements SqlConnection.Connection {
  constructor(readonly connection: PgConnection.PgConnection, readonly timeoutMs: number) {}

  private rows(sql: string, params: ReadonlyArray<unknown>, transformRows: TransformRows) {
    const rows = Effect.map(this.connection.query(sql, params, false), (result) => result.rows)
    return bounded(this.timeoutMs, transformRows === undefined ? rows : Effect.map(rows, transformRows))
  }
  execute(sql: string, params: ReadonlyArray<unknown>, transformRows: TransformRows) {
    return this.rows(sql, params, transformRows)
  }
  executeUnprepared(sql: string, params: ReadonlyArray<unknown>, transformRows: TransformRows) {
    return this.rows(sql, params, transformRows)
  }
  executeWithoutTransform(sql: string, params: ReadonlyArray<unknown>) {
    return this.rows(sql, params, undefined)
  }
  executeRaw(sql: string, params: ReadonlyArray<unknown>) {
    return bounded(this.timeoutMs, this.connection.query(sql, params, false))
  }
  executeValues(sql: string, params: ReadonlyArray<unknown>) {
    return bounded(this.timeoutMs, this.connection.queryValues(sql, params, false))
  }
  executeValuesUnprepared(sql: string, params: ReadonlyArray<unknown>) {
    return this.executeValues(sql, params)
  }
  executeStream(sql: string, params: ReadonlyArray<unknown>, transformRows: TransformRows) {
    // Not used by Hearken; a stream's rows arrive over time, so no deadline bounds the whole.
    const stream = this.connection.stream(sql, params)
    return transformRows === undefined
      ? stream
      : Stream.mapArray(stream, (rows) => transformRows(rows) as Arr.NonEmptyReadonlyArray<PgConnection.Row>)
  }
}

/** PostgreSQL answers `ROLLBACK` to a `COMMIT` of an aborted transaction (as `PgClient` checks). */
export const commit = (connection: SqlConnection.Connection): Effect.Effect<void, SqlError.SqlError> =>
  Effect.flatMap(connection.executeRaw("COMMIT", []), (result) =>
    (result as { readonly command?: string }).command === "ROLLBACK"
      ? Effect.fail(
        new SqlError.SqlError({
          reason: new SqlError.UnknownError({
            cause: new Error("COMMIT rolled back an aborted transaction"),
            message: "COMMIT rolled back an aborted transaction",
            operation: "commit"
          })
        })
      )
      : Effect.void)

/**
 * The client behind a transaction-mode pooler: `PgClient`'s pool, with every
 * statement unprepared and bounded by `timeoutMs` (`bounded`).
 */
const makePooledClient = (
  options: PgClient.PgPoolConfig,
  timeoutMs: number
): Effect.Effect<SqlClient.SqlClient, SqlError.SqlError, Scope.Scope | Reactivity.Reactivity> =>
  Effect.gen(function*() {
    const pool = yield* PgPool.make({ ...options, prepare: false })
    const wrap = (connection: PgConnection.PgConnection) => new BoundedConnection(connection, timeoutMs)
    return yield* SqlClient.make({
      driver: "pg",
      acquirer: Effect.map(pool.get, wrap),
      borrower: (f) => pool.use((connection) => f(wrap(connection))),
      transactionAcquirer: Effect.map(pool.reserve, wrap),
      prepareTransactionControls: true,
      commit,
      releaseSavepoint: (name) => `RELEASE SAVEPOINT ${name}`,
      compiler: PgClient.makeCompiler(),
      spanAttributes: [
        ["db.system.name", "postgresql"],
        ["db.namespace", options.database ?? "postgres"],
        ["server.address", options.host ?? "localhost"],
        ["server.port", options.port ?? 5432]
      ]
    })
  })

/**
 * The server and database `DATABASE_URL` names, as separate options:
 * PgClient labels its SQL spans (`server.address`, `db.namespace`) from
 * these options only, and without them says `localhost` and `postgres`
 * whatever the URL holds. They are the URL's own values, so the connection
 * is the same.
 */
export const namedBy = (raw: string): { host?: string; port?: number; database?: string } => {
  try {
    const url = new URL(raw)
    const host = decodeURIComponent(url.hostname.replace(/^\[(.*)\]$/, "$1"))
    const database = decodeURIComponent(url.pathname.slice(1))
    return {
      ...(host === "" ? {} : { host }),
      ...(url.port === "" ? {} : { port: Number(url.port) }),
      ...(database === "" ? {} : { database })
    }
  } catch {
    return {} // left to PgClient, which refuses it with its own error
  }
}

/** The options of every PostgreSQL client on `url`. */
const clientOptions = (url: Redacted.Redacted, maxConnections: number) => ({
  url,
  ...namedBy(Redacted.value(url)),
  maxConnections,
  connectTimeout: "5 seconds",
  applicationName
}) satisfies PgClient.PgPoolConfig

/** A direct connection (or a session-mode pooler): the statement timeout is every session's default, from its startup packet. */
const sessionClient = (url: Redacted.Redacted, maxConnections: number, statementTimeoutMs: number) =>
  PgClient.make({ ...clientOptions(url, maxConnections), startupParameters: { statement_timeout: String(statementTimeoutMs) } })

/**
 * A client on `url` reached as `DATABASE_POOL_MODE` says `DATABASE_URL` is (the read replica's,
 * `sql/ReadReplica.ts`): a pool of `poolSize`, the statement timeout a session's default, or
 * Hearken's per statement behind a transaction-mode pooler.
 */
export const clientOn = (
  config: DatabaseConfigShape,
  url: Redacted.Redacted
): Effect.Effect<SqlClient.SqlClient, SqlError.SqlError, Scope.Scope | Reactivity.Reactivity> =>
  config.databasePoolMode === "session"
    ? sessionClient(url, poolSize(config), config.databaseStatementTimeoutMs)
    : makePooledClient(clientOptions(url, poolSize(config)), config.databaseStatementTimeoutMs)

/** The client and its `Sessions`, before migrating; `migrator` is the client the migrations run on. */
const clients = Effect.gen(function*() {
  const config = yield* DatabaseConfig
  if (Option.isNone(config.databaseUrl)) {
    const port = yield* startEmbedded(config.pgliteDir)
    const client = yield* PgClient.make({
      host: "127.0.0.1",
      port,
      username: "postgres",
      database: "postgres",
      ssl: false,
      maxConnections: poolSize(config)
    })
    return { client, migrator: client as SqlClient.SqlClient, sessions: Sessions.of({ listener: Option.none(), unbounded: unboundedOnSession(client) }) }
  }
  const url = config.databaseUrl.value
  const timeoutMs = config.databaseStatementTimeoutMs
  // DATABASE_DIRECT_URL, when set, takes what needs a session: migrations, LISTEN, index builds.
  const direct = Option.isSome(config.databaseDirectUrl)
    ? Option.some(yield* sessionClient(config.databaseDirectUrl.value, 2, timeoutMs))
    : Option.none()
  if (config.databasePoolMode === "session") {
    const client = yield* sessionClient(url, poolSize(config), timeoutMs)
    const session = Option.getOrElse(direct, () => client)
    return { client, migrator: session as SqlClient.SqlClient, sessions: Sessions.of({ listener: Option.some(session), unbounded: unboundedOnSession(session) }) }
  }
  // Behind a transaction-mode pooler: no startup parameter, no named statement, the timeout per statement.
  const client = yield* makePooledClient(clientOptions(url, poolSize(config)), timeoutMs)
  if (Option.isSome(direct)) {
    return { client, migrator: direct.value as SqlClient.SqlClient, sessions: Sessions.of({ listener: direct, unbounded: unboundedOnSession(direct.value) }) }
  }
  // No direct URL: migrations and index builds go through the pooler, unbounded by Hearken (each is one
  // transaction or one statement, which transaction mode carries); LISTEN cannot, and the worker polls.
  const unbounded = yield* PgClient.make({ ...clientOptions(url, 1), prepare: false })
  return {
    client,
    migrator: unbounded as SqlClient.SqlClient,
    sessions: Sessions.of({ listener: Option.none(), unbounded: (statement) => Effect.asVoid(unbounded.unsafe(statement)) })
  }
})

/**
 * The PostgreSQL client (`SqlClient`) and its `Sessions`: `DATABASE_URL` when
 * set, else the embedded PGlite (one connection: PGlite serves exactly one),
 * migrated before use.
 *
 * On PostgreSQL every session starts with `statement_timeout` at
 * `DATABASE_STATEMENT_TIMEOUT_MS`: whatever a statement does, the server
 * cancels it past that, and the request answers 500 instead of holding a
 * connection. Behind a transaction-mode pooler (`DATABASE_POOL_MODE=transaction`),
 * which refuses that startup parameter, the client is `makePooledClient`'s,
 * which cancels each statement past it; `DATABASE_DIRECT_URL` takes the
 * migrations, `LISTEN` and index builds (docs/operations.md: "Behind PgBouncer").
 * PGlite accepts the setting but cannot enforce it (its single-threaded
 * engine has no timer to interrupt a query), so it is not sent there: the
 * embedded database relies on the queries' own bounds, and is for trying the
 * API, not for serving it.
 */
export const layer = Layer.effectContext(
  Effect.gen(function*() {
    const { client, migrator, sessions } = yield* clients
    yield* Effect.provideService(migrate, SqlClient.SqlClient, migrator)
    return Context.make(SqlClient.SqlClient, client).pipe(Context.add(Sessions, sessions))
  })
).pipe(Layer.provide(Reactivity.layer))
