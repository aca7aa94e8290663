import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** The webhook outbox (decision 0007): one event per created post, one delivery per subscribed endpoint. */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  // Pausing: an endpoint whose attempts keep failing stops consuming the worker.
  yield* sql`ALTER TABLE webhook_endpoints
    ADD COLUMN consecutive_failures integer NOT NULL DEFAULT 0,
    ADD COLUMN failing_since timestamptz,
    ADD COLUMN paused_at timestamptz`

  // Every created post looks up its organization's subscribed endpoints.
  yield* sql`CREATE INDEX webhook_endpoints_organization_idx ON webhook_endpoints (organization_id)`

  // The message: its id is the `webhook-id`, its body the exact bytes that are signed and sent.
  yield* sql`CREATE TABLE webhook_events (
    id text PRIMARY KEY,
    organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    type text NOT NULL,
    body text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
  )`

  // One message to one endpoint. `pending` rows are due at `next_attempt_at` ('-infinity': at once)
  // unless a worker holds them (`lease_until` in the future); `held` rows wait for a paused endpoint.
  yield* sql`CREATE TABLE webhook_deliveries (
    id text PRIMARY KEY,
    event_id text NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
    endpoint_id text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'held', 'succeeded', 'failed')),
    attempts integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT '-infinity',
    lease_until timestamptz,
    lease_token text,
    last_attempt_at timestamptz,
    last_status integer,
    last_error text,
    last_response text,
    completed_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (event_id, endpoint_id)
  )`
  yield* sql`CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at, id) WHERE status = 'pending'`
  yield* sql`CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, status)`
  yield* sql`CREATE INDEX webhook_deliveries_failed_idx ON webhook_deliveries (completed_at DESC, id) WHERE status = 'failed'`

  // New deliveries wake the workers (LISTEN hearken_webhooks) when their transaction commits.
  // A row trigger: a statement trigger would fire for posts that insert no delivery too, and
  // every NOTIFY serializes its transaction's commit. Repeats within a transaction fold into one.
  yield* sql`CREATE FUNCTION hearken_webhooks_notify() RETURNS trigger LANGUAGE plpgsql AS
    $$ BEGIN PERFORM pg_notify('hearken_webhooks', ''); RETURN NULL; END $$`
  yield* sql`CREATE TRIGGER webhook_deliveries_notify AFTER INSERT ON webhook_deliveries
    FOR EACH ROW EXECUTE FUNCTION hearken_webhooks_notify()`
})
