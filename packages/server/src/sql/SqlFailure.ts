import { Effect, Schema } from "effect"
import { SqlError } from "effect/sql"
import { describeIssue } from "../edge/SchemaIssues.js"

/** A statement that failed (`SqlError`), or rows its schema refuses (`SchemaError`: the SQL and its schema disagree). */
export type SqlFailure = SqlError.SqlError | Schema.SchemaError

const isSqlFailure = (error: unknown): error is SqlFailure => SqlError.isSqlError(error) || Schema.isSchemaError(error)

/**
 * The defect for rows that do not decode: which field and what was expected, never the value
 * (a row may hold a webhook secret or an organization's token secret, and the defect is logged).
 */
export class RowsNotDecoded extends Error {
  constructor(error: Schema.SchemaError) {
    super(`rows the statement's schema refuses: ${describeIssue(error.issue, "row")}`)
    this.name = "RowsNotDecoded"
  }
}

const toDefect = (error: SqlFailure) => Effect.die(Schema.isSchemaError(error) ? new RowsNotDecoded(error) : error)

/**
 * The one place where data access failing becomes a defect: no caller can act on it, so the edge
 * answers 500 (docs/api.md: "Errors") and logs the cause. The defect is the `SqlError` itself, or
 * `RowsNotDecoded` (without the row's values); every other error passes through. Used by the repositories' public methods and by the services that
 * run several statements in one transaction (`Feedback`, `Importer`).
 */
export const orDie = <A, E, R>(self: Effect.Effect<A, E | SqlFailure, R>): Effect.Effect<A, Exclude<E, SqlFailure>, R> =>
  Effect.catchIf<A, E | SqlFailure, R, SqlFailure, never, never, never>(self, isSqlFailure, toDefect)

/**
 * Rows that do not decode mean the SQL and its schema disagree: a defect, while the statement's own
 * failure (`SqlError`) stays in the error channel for a caller that maps it (with `orDie`, or otherwise).
 */
export const decoded = <A, E, R>(
  self: Effect.Effect<A, E | Schema.SchemaError, R>
): Effect.Effect<A, Exclude<E, Schema.SchemaError>, R> =>
  Effect.catchIf<A, E | Schema.SchemaError, R, Schema.SchemaError, never, never, never>(self, Schema.isSchemaError, toDefect)
