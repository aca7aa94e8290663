import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Secrets a webhook endpoint still signs with during a rotation (fixture
 * `previousSecrets`, decision 0034): every delivery carries one signature per
 * secret in its `webhook-signature` header, so a receiver that knows only the
 * old or only the new secret verifies it. A column with a constant default:
 * PostgreSQL adds it without rewriting the table, and a version that does not
 * know it goes on signing with `secret` alone.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE webhook_endpoints ADD COLUMN previous_secrets text[] NOT NULL DEFAULT '{}'`
})
