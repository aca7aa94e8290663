import type { SqlClient, Statement } from "effect/sql"

/** What an upsert did to one row: created it, changed it, or found it already as it would be set. */
export type RowOutcome = "added" | "changed" | "unchanged"

/**
 * Says what `upsert` did to the row `id` of `table`, in the same statement. `upsert` must be
 * `INSERT INTO table … ON CONFLICT (id) DO UPDATE SET … WHERE table.organization_id =
 * EXCLUDED.organization_id AND (<the row's columns>) IS DISTINCT FROM (<what they would be set to>)
 * RETURNING (xmax = 0) AS inserted`: a row already as it would be set is not written, and returns
 * nothing. Yields one row whose `outcome` is null when the id belongs to another organization
 * (nothing was written then either).
 */
export const upsertOutcome = (
  sql: SqlClient.SqlClient,
  upsert: Statement.Statement<{ readonly inserted: boolean }>,
  table: string,
  id: string,
  organizationId: string
) =>
  sql<{ outcome: RowOutcome | null }>`WITH up AS (${upsert})
    SELECT CASE WHEN EXISTS (SELECT FROM up WHERE inserted) THEN 'added'
      WHEN EXISTS (SELECT FROM up) THEN 'changed'
      WHEN EXISTS (SELECT FROM ${sql(table)} WHERE id = ${id} AND organization_id = ${organizationId}) THEN 'unchanged'
    END AS outcome`
