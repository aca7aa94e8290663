import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Each organization's boards have a pool of their own (decision 0027): a row
 * of `embedding_calibrations` now names its organization, and the pool's row
 * (board id '') is one per organization and model. The pool across every
 * organization goes; so do rows of boards that are gone (the calibrator
 * would have dropped them). The boards' rows stay in use but are marked out
 * of date (`newest` NULL): the calibrator measures each again, now counting
 * copies once, and builds the organizations' pools from them.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE embedding_calibrations ADD COLUMN organization_id text`
  yield* sql`UPDATE embedding_calibrations c SET organization_id = b.organization_id, newest = NULL FROM boards b WHERE b.id = c.board_id`
  yield* sql`DELETE FROM embedding_calibrations WHERE organization_id IS NULL`
  yield* sql`ALTER TABLE embedding_calibrations ALTER COLUMN organization_id SET NOT NULL`
  yield* sql`ALTER TABLE embedding_calibrations DROP CONSTRAINT embedding_calibrations_pkey`
  yield* sql`ALTER TABLE embedding_calibrations ADD PRIMARY KEY (model, dimensions, organization_id, board_id)`
})
