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
