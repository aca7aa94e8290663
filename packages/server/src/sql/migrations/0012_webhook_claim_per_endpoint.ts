import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The claim walks the endpoints that have pending deliveries and takes each
 * one's share from the front of its own queue (decision 0017), so it needs
 * pending rows by endpoint, in due order. That replaces the index over every
 * endpoint's rows in one due order, which only the old claim read.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // IF NOT EXISTS: an operator may build it beforehand with CREATE INDEX CONCURRENTLY (decision 0017).
  yield* sql`CREATE INDEX IF NOT EXISTS webhook_deliveries_endpoint_due_idx ON webhook_deliveries (endpoint_id, next_attempt_at, id)
    WHERE status = 'pending'`
  yield* sql`DROP INDEX IF EXISTS webhook_deliveries_due_idx`
})
