import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { Reactivity } from "effect/reactivity"
import type { SqlClient } from "effect/sql"
import { randomBytes } from "node:crypto"

/** The server tests run against; `TEST_DATABASE_URL` points elsewhere. */
export const adminUrl = process.env["TEST_DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/postgres"

const urlFor = (database: string) => {
  const url = new URL(adminUrl)
  url.pathname = `/${database}`
  return url.toString()
}

/**
 * How the servers under test reach their database, from `TEST_DATABASE_VIA` (read at each call,
 * so test/pgbouncer.test.ts can set it before it imports the files it runs again):
 * - unset or `direct`: `DATABASE_URL` is the database itself;
 * - `pgbouncer`: `DATABASE_URL` goes through the PgBouncer that scripts/prepare-services.sh starts in
 *   transaction mode (`TEST_PGBOUNCER_PORT`, 6432), `DATABASE_POOL_MODE=transaction`, and
 *   `DATABASE_DIRECT_URL` is the database itself (migrations, LISTEN);
 * - `pgbouncer-only`: the same without `DATABASE_DIRECT_URL` (the webhook worker polls).
 * A test's own statements (`TestDatabase.query`) always go direct.
 */
export const databaseEnv = (url: string): Record<string, string> => {
  const via = process.env["TEST_DATABASE_VIA"] ?? "direct"
  if (via === "direct") return { DATABASE_URL: url }
  if (via !== "pgbouncer" && via !== "pgbouncer-only") throw new Error(`TEST_DATABASE_VIA=${via}: expected direct, pgbouncer or pgbouncer-only`)
  return {
    DATABASE_URL: pooledUrl(url),
    DATABASE_POOL_MODE: "transaction",
    ...(via === "pgbouncer" ? { DATABASE_DIRECT_URL: url } : {})
  }
}

/** `url` through the test PgBouncer (transaction mode, loopback, `TEST_PGBOUNCER_PORT` or 6432). */
export const pooledUrl = (url: string) => {
  const pooled = new URL(url)
  pooled.port = process.env["TEST_PGBOUNCER_PORT"] ?? "6432"
  return pooled.toString()
}

/** Runs `f` with a one-connection client on `url` (no relative imports here: the benchmarks use it too). */
export const withClient = <A>(url: string, f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  Effect.runPromise(
    Effect.scoped(Effect.flatMap(PgClient.make({ url: Redacted.make(url), maxConnections: 1 }), f)).pipe(
      Effect.provide(Reactivity.layer)
    )
  )

export const checkPostgres = () =>
  withClient(adminUrl, (sql) => sql`SELECT name FROM pg_available_extensions WHERE name IN ('vector', 'pg_trgm')`).then(
    (rows) => {
      if (rows.length !== 2) throw new Error("the vector and pg_trgm extensions are not both installed")
    }
  )

export interface TestDatabase {
  readonly name: string
  readonly url: string
  /** Runs one query against the test database. */
  readonly query: <T = Record<string, unknown>>(
    f: (sql: SqlClient.SqlClient) => Effect.Effect<ReadonlyArray<T>, unknown>
  ) => Promise<ReadonlyArray<T>>
  readonly drop: () => Promise<void>
}

/** The ids of the posts titled `title` in `db`, in id order. */
export const postsTitled = async (db: Pick<TestDatabase, "query">, title: string) =>
  (await db.query<{ id: string }>((sql) => sql`SELECT id FROM posts WHERE title = ${title} ORDER BY id`)).map((r) => r.id)

/** A fresh, empty database, dropped (forcibly) by `drop`. */
export const createDatabase = async (): Promise<TestDatabase> => {
  const name = `hearken_test_${randomBytes(6).toString("hex")}`
  await withClient(adminUrl, (sql) => sql.unsafe(`CREATE DATABASE ${name}`))
  const url = urlFor(name)
  return {
    name,
    url,
    query: (f) => withClient(url, f),
    drop: () => withClient(adminUrl, (sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined)
  }
}
