import { Schema } from "effect"
import { type SqlClient, SqlSchema, type Statement } from "effect/sql"
import { decoded } from "./SqlFailure.js"

/** What an upsert did to one row: created it, changed it, or found it already as it would be set. */
export const RowOutcome = Schema.Literals(["added", "changed", "unchanged"])
export type RowOutcome = typeof RowOutcome.Type

/** The one row `upsertOutcome` yields: `outcome` is null when the id belongs to another organization. */
export const UpsertOutcome = Schema.Struct({ outcome: Schema.NullOr(RowOutcome) })

/**
 * Says what `upsert` did to the row `id` of `table`, in the same statement. `upsert` must be
 * `INSERT INTO table … ON CONFLICT (id) DO UPDATE SET … WHERE table.organization_id =
 * EXCLUDED.organization_id AND (<the row's columns>) IS DISTINCT FROM (<what they would be set to>)
 * RETURNING (xmax = 0) AS inserted`: a row already as it would be set is not written, and returns
 * nothing. Yields one row whose `outcome` is null when the id belongs to another organization
 * (nothing was written then either). Rows that do not decode are a defect.
 */
export const upsertOutcome = (
  sql: SqlClient.SqlClient,
  upsert: Statement.Fragment,
  table: string,
  id: string,
  organizationId: string
) =>
  SqlSchema.findAll({
    Request: Schema.Void,
    Result: UpsertOutcome,
    execute: () =>
      sql`WITH up AS (${upsert})
        SELECT CASE WHEN EXISTS (SELECT FROM up WHERE inserted) THEN 'added'
          WHEN EXISTS (SELECT FROM up) THEN 'changed'
          WHEN EXISTS (SELECT FROM ${sql(table)} WHERE id = ${id} AND organization_id = ${organizationId}) THEN 'unchanged'
        END AS outcome`
  })(undefined).pipe(decoded)
