import { Config, Context, type Option, type Redacted, Schema } from "effect"
import { Milliseconds, UrlString, Word } from "./schemas.js"
import { fixtureFileProblem } from "./SeedFile.js"

// PostgreSQL or the embedded database (`sql/`), its statement timeouts, and what it is seeded with (`fixtures/startup.ts`).

/** Longest a statement may run on PostgreSQL before it is cancelled (not enforced by PGlite). */
export const databaseStatementTimeoutMs = Config.schema(
  Milliseconds(3_600_000, "a number of milliseconds between 1 and 3600000"),
  "DATABASE_STATEMENT_TIMEOUT_MS"
).pipe(Config.withDefault(5000))

/** Longest a suggestion's statements may run: at most `databaseStatementTimeoutMs`, which bounds every statement. */
export const suggestionsStatementTimeoutMs = (databaseStatementTimeoutMs: number) =>
  Config.schema(
    Milliseconds(
      databaseStatementTimeoutMs,
      `a number of milliseconds between 1 and DATABASE_STATEMENT_TIMEOUT_MS (${databaseStatementTimeoutMs})`
    ),
    "SUGGESTIONS_STATEMENT_TIMEOUT_MS"
  ).pipe(Config.withDefault(Math.min(1000, databaseStatementTimeoutMs)))

export const databaseUrl = Config.option(Config.schema(
  Schema.RedactedFromValue(UrlString(["postgres:", "postgresql:"], "a postgres:// or postgresql:// URL", { socketHost: true })),
  "DATABASE_URL"
))

// PostgreSQL behind a pooler (issue 30; docs/operations.md: "Behind PgBouncer").
/**
 * `transaction` when `DATABASE_URL` is a transaction-mode pooler (PgBouncer's `pool_mode =
 * transaction`; the default when `DATABASE_DIRECT_URL` is set, else `session`): no startup parameters, no named prepared statements, the statement timeout
 * enforced per statement (`sql/Database.ts`), and no `LISTEN` there.
 */
export const databasePoolMode = Config.option(Config.schema(Word(["session", "transaction"], "session or transaction"), "DATABASE_POOL_MODE"))

/** A direct connection (a session of its own) for what a transaction-mode pooler cannot carry: migrations, `LISTEN`, index builds. */
export const databaseDirectUrl = Config.option(Config.schema(
  Schema.RedactedFromValue(UrlString(["postgres:", "postgresql:"], "a postgres:// or postgresql:// URL")),
  "DATABASE_DIRECT_URL"
))

/**
 * A streaming replica of `DATABASE_URL` for the reads that need not see their own writes:
 * `/boards`, `/updates` and suggestions (`sql/ReadReplica.ts`). Reached as `DATABASE_URL` is
 * (`DATABASE_POOL_MODE` says what both are).
 */
export const databaseReadUrl = Config.option(Config.schema(
  Schema.RedactedFromValue(UrlString(["postgres:", "postgresql:"], "a postgres:// or postgresql:// URL", { socketHost: true })),
  "DATABASE_READ_URL"
))

/** A directory, or `memory`. */
export const pgliteDir = Config.String("PGLITE_DIR").pipe(Config.withDefault(".data/pglite"))

export const seedFile = Config.option(Config.schema(Schema.String.check(Schema.makeFilter(fixtureFileProblem)), "SEED_FILE"))

/** The database's settings: `sql/`, the suggestions' statement limits, the start-up seed, the operator commands. */
export interface DatabaseConfigShape {
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  /** As given, or `transaction` when `DATABASE_DIRECT_URL` is set, else `session`. */
  readonly databasePoolMode: "session" | "transaction"
  readonly databaseDirectUrl: Option.Option<Redacted.Redacted<string>>
  readonly databaseReadUrl: Option.Option<Redacted.Redacted<string>>
  readonly pgliteDir: string
  readonly databaseStatementTimeoutMs: number
  readonly suggestionsStatementTimeoutMs: number
  readonly seedFile: Option.Option<string>
}

export class DatabaseConfig extends Context.Service<DatabaseConfig, DatabaseConfigShape>()("hearken/DatabaseConfig") {}
