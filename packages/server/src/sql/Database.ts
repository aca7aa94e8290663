import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option, Redacted, Schedule } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import { ServerConfig, type ServerConfigShape } from "../config.js"
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

/** This process's sessions in `pg_stat_activity`: the pool gauges (`observability/Gauges.ts`) count them there. */
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
export const poolSize = (config: ServerConfigShape) => Option.isSome(config.databaseUrl) ? postgresPoolSize : 1

/**
 * Runs one statement with no statement timeout, on a connection of its own
 * for the while: for an index build, which takes as long as the table is big
 * and may not run inside a transaction (`CONCURRENTLY`), so `SET LOCAL`
 * cannot scope it.
 */
export const unboundedStatement = (sql: SqlClient.SqlClient, statement: string) =>
  Effect.gen(function*() {
    const connection = yield* sql.reserve
    yield* connection.executeUnprepared("SET statement_timeout = 0", [], undefined)
    // RESET goes back to the session's default: the limit its startup packet set.
    yield* connection.executeUnprepared(statement, [], undefined).pipe(
      Effect.ensuring(Effect.ignore(connection.executeUnprepared("RESET statement_timeout", [], undefined)))
    )
  }).pipe(Effect.scoped)

/**
 * The PostgreSQL client: `DATABASE_URL` when set, else the embedded PGlite
 * (one connection: PGlite serves exactly one), migrated before use.
 *
 * On PostgreSQL every session starts with `statement_timeout` at
 * `DATABASE_STATEMENT_TIMEOUT_MS`: whatever a statement does, the server
 * cancels it past that, and the request answers 500 instead of holding a
 * connection. PGlite accepts the setting but cannot enforce it (its
 * single-threaded engine has no timer to interrupt a query), so it is not
 * sent there: the embedded database relies on the queries' own bounds, and
 * is for trying the API, not for serving it.
 */
/**
 * The server and database `DATABASE_URL` names, as separate options:
 * PgClient labels its SQL spans (`server.address`, `db.namespace`) from
 * these options only, and without them says `localhost` and `postgres`
 * whatever the URL holds. They are the URL's own values, so the connection
 * is the same.
 */
const namedBy = (raw: string): { host?: string; port?: number; database?: string } => {
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

export const layer = Layer.unwrap(
  Effect.gen(function*() {
    const config = yield* ServerConfig
    if (Option.isSome(config.databaseUrl)) {
      return PgClient.layer({
        url: config.databaseUrl.value,
        ...namedBy(Redacted.value(config.databaseUrl.value)),
        maxConnections: poolSize(config),
        connectTimeout: "5 seconds",
        applicationName,
        startupParameters: { statement_timeout: String(config.databaseStatementTimeoutMs) }
      })
    }
    return Layer.unwrap(
      Effect.map(startEmbedded(config.pgliteDir), (port) =>
        PgClient.layer({
          host: "127.0.0.1",
          port,
          username: "postgres",
          database: "postgres",
          ssl: false,
          maxConnections: poolSize(config)
        }))
    )
  })
).pipe(Layer.tap((context) => Effect.provide(migrate, context)))
