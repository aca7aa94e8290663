import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The W3C `traceparent` of the request that created an event (decision 0013), so
 * that its deliveries, sent later by any worker, link back to that request's
 * trace. NULL when traces are not exported.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE webhook_events ADD COLUMN traceparent text`
})
