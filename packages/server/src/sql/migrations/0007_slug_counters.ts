import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The last number given to each slug base of an organization (`dark-mode` is
 * 1, `dark-mode-2` is 2, …), so that a new post's slug costs one indexed row
 * however many posts share its title. A base's row is created from the
 * highest number in use the first time the base is needed.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE slug_counters (
    organization_id text NOT NULL,
    base text NOT NULL,
    last integer NOT NULL,
    PRIMARY KEY (organization_id, base)
  )`
})
