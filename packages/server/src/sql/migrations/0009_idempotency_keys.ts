import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * `Idempotency-Key` on `POST /feedback` (docs/api.md: "Retries: Idempotency-Key"):
 * the first answer for a key, by organization, with the hash of the request it
 * answered. Only created posts are remembered; a row older than 24 hours no
 * longer counts and is replaced or purged.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE idempotency_keys (
    organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    key text NOT NULL,
    request_hash text NOT NULL,
    response jsonb NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (organization_id, key)
  )`
  yield* sql`CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at)`
})
