import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * What the claim reads instead of walking every endpoint with pending
 * deliveries (decision 0026): one row per endpoint and one per organization
 * and lane, saying when the next of their deliveries can be claimed and when
 * a claim last took from them. Triggers on `webhook_deliveries` and
 * `webhook_endpoints` keep them exact, in the transaction that changes the
 * deliveries, so a restart or a crash loses nothing.
 *
 * - `stalled`: the lane. An endpoint whose last recorded attempt failed after
 *   a second or more without an answer (`webhook_endpoints.stalled`: it timed
 *   out, or hung before failing) is in the stalled lane; an organization has
 *   a row for each lane. A prompt failure (a 503 at once) is not stalled.
 * - `ready_at`: the earliest moment one of its pending deliveries can be
 *   claimed (its due time, or the end of its lease when it is leased); NULL
 *   when none can (nothing pending, or the endpoint is paused). For an
 *   organization, the least of its endpoints' in that lane.
 * - `served_at`: the claim time of the last delivery taken from it.
 * - `turn`: the later of the two. Claims take organizations, and then their
 *   endpoints, in `turn` order among those with `turn <= now`: due ones,
 *   served longest ago first, with one index range scan and no probe of
 *   anything that is not ready.
 *
 * Correctness under concurrency: every writer locks the queue rows before it
 * reads what it derives them from, so the last one to write has read every
 * change committed before it. Recomputing takes FOR UPDATE; an insert, which
 * can only make a row earlier, takes FOR KEY SHARE (inserts do not wait for
 * each other) and lowers the row if it must.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  // The claim time of each lease: a claim's moment, from the worker's clock, for `served_at`.
  yield* sql`ALTER TABLE webhook_deliveries ADD COLUMN leased_at timestamptz`
  // The endpoint's last recorded attempt failed after holding its slot a second or more.
  yield* sql`ALTER TABLE webhook_endpoints ADD COLUMN stalled boolean NOT NULL DEFAULT false`

  yield* sql`CREATE TABLE webhook_endpoint_queues (
    endpoint_id text PRIMARY KEY REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    organization_id text NOT NULL,
    stalled boolean NOT NULL DEFAULT false,
    ready_at timestamptz,
    served_at timestamptz NOT NULL DEFAULT '-infinity',
    turn timestamptz GENERATED ALWAYS AS (CASE WHEN ready_at IS NOT NULL THEN greatest(ready_at, served_at) END) STORED
  )`
  yield* sql`CREATE INDEX webhook_endpoint_queues_turn_idx ON webhook_endpoint_queues (organization_id, stalled, turn, endpoint_id)
    WHERE turn IS NOT NULL`
  yield* sql`CREATE INDEX webhook_endpoint_queues_ready_idx ON webhook_endpoint_queues (organization_id, stalled, ready_at)
    WHERE ready_at IS NOT NULL`

  yield* sql`CREATE TABLE webhook_organization_queues (
    organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    stalled boolean NOT NULL,
    ready_at timestamptz,
    served_at timestamptz NOT NULL DEFAULT '-infinity',
    turn timestamptz GENERATED ALWAYS AS (CASE WHEN ready_at IS NOT NULL THEN greatest(ready_at, served_at) END) STORED,
    PRIMARY KEY (organization_id, stalled)
  )`
  yield* sql`CREATE INDEX webhook_organization_queues_turn_idx ON webhook_organization_queues (stalled, turn, organization_id)
    WHERE turn IS NOT NULL`

  // Recomputes the queue rows of `ids` (and of their organizations, when one of them changed),
  // moving `served_at` up to the claim times in `served_ids`/`served_ats`. An endpoint's
  // ready_at is the least of: the due time of its first pending delivery without a lease, and
  // the end of the lease or the due time, whichever is later, of the leased ones before it in
  // due order. Both are short walks of webhook_deliveries_endpoint_due_idx: past the leased
  // deliveries at the front of the endpoint's queue, never its whole backlog.
  yield* sql`CREATE FUNCTION hearken_webhook_settle(ids text[], served_ids text[], served_ats timestamptz[])
    RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
      orgs text[];
    BEGIN
      PERFORM 1 FROM unnest(ids) AS x (id) JOIN webhook_endpoint_queues q ON q.endpoint_id = x.id
        ORDER BY q.endpoint_id FOR UPDATE OF q;
      WITH served AS (
        SELECT s.id, max(s.at) AS at FROM unnest(served_ids, served_ats) AS s (id, at) GROUP BY s.id
      ), fresh AS (
        SELECT q.endpoint_id, e.stalled,
          CASE WHEN e.paused_at IS NULL THEN LEAST(f.at, l.at) END AS ready_at,
          greatest(q.served_at, served.at) AS served_at
        FROM (SELECT DISTINCT id FROM unnest(ids) AS x (id)) x
        JOIN webhook_endpoint_queues q ON q.endpoint_id = x.id
        JOIN webhook_endpoints e ON e.id = q.endpoint_id
        LEFT JOIN served ON served.id = q.endpoint_id
        LEFT JOIN LATERAL (
          SELECT d.next_attempt_at AS at FROM webhook_deliveries d
          WHERE d.endpoint_id = q.endpoint_id AND d.status = 'pending' AND d.lease_until IS NULL
          ORDER BY d.next_attempt_at, d.id LIMIT 1
        ) f ON true
        LEFT JOIN LATERAL (
          SELECT min(greatest(d.next_attempt_at, d.lease_until)) AS at FROM webhook_deliveries d
          WHERE d.endpoint_id = q.endpoint_id AND d.status = 'pending' AND d.lease_until IS NOT NULL
            AND (f.at IS NULL OR d.next_attempt_at < f.at)
        ) l ON true
      ), changed AS (
        UPDATE webhook_endpoint_queues q
        SET stalled = fresh.stalled, ready_at = fresh.ready_at, served_at = fresh.served_at
        FROM fresh
        WHERE q.endpoint_id = fresh.endpoint_id
          AND (q.stalled, q.ready_at, q.served_at) IS DISTINCT FROM (fresh.stalled, fresh.ready_at, fresh.served_at)
        RETURNING q.organization_id
      )
      SELECT array_agg(DISTINCT organization_id) INTO orgs FROM changed;
      IF orgs IS NULL THEN
        RETURN;
      END IF;
      PERFORM 1 FROM unnest(orgs) AS x (id) JOIN webhook_organization_queues o ON o.organization_id = x.id
        ORDER BY o.organization_id, o.stalled FOR UPDATE OF o;
      WITH served AS (
        SELECT q.organization_id, q.stalled, max(s.at) AS at
        FROM unnest(served_ids, served_ats) AS s (id, at) JOIN webhook_endpoint_queues q ON q.endpoint_id = s.id
        GROUP BY 1, 2
      ), fresh AS (
        SELECT o.organization_id, o.stalled, first.ready_at, greatest(o.served_at, served.at) AS served_at
        FROM unnest(orgs) AS x (id)
        JOIN webhook_organization_queues o ON o.organization_id = x.id
        LEFT JOIN served ON served.organization_id = o.organization_id AND served.stalled = o.stalled
        LEFT JOIN LATERAL (
          SELECT q.ready_at FROM webhook_endpoint_queues q
          WHERE q.organization_id = o.organization_id AND q.stalled = o.stalled AND q.ready_at IS NOT NULL
          ORDER BY q.ready_at LIMIT 1
        ) first ON true
      )
      UPDATE webhook_organization_queues o SET ready_at = fresh.ready_at, served_at = fresh.served_at
      FROM fresh
      WHERE o.organization_id = fresh.organization_id AND o.stalled = fresh.stalled
        AND (o.ready_at, o.served_at) IS DISTINCT FROM (fresh.ready_at, fresh.served_at);
    END $$`

  // New pending deliveries can only make their endpoints (and organizations) ready earlier.
  yield* sql`CREATE FUNCTION hearken_webhook_lower(ids text[], dues timestamptz[])
    RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
      lowered text[];
    BEGIN
      PERFORM 1 FROM (SELECT DISTINCT id FROM unnest(ids) AS x (id)) x JOIN webhook_endpoint_queues q ON q.endpoint_id = x.id
        ORDER BY q.endpoint_id FOR KEY SHARE OF q;
      PERFORM 1 FROM webhook_endpoint_queues q
        JOIN (SELECT u.id, min(u.at) AS at FROM unnest(ids, dues) AS u (id, at) GROUP BY u.id) w ON w.id = q.endpoint_id
        JOIN webhook_endpoints e ON e.id = q.endpoint_id AND e.paused_at IS NULL
        WHERE q.ready_at IS NULL OR q.ready_at > w.at
        ORDER BY q.endpoint_id FOR NO KEY UPDATE OF q;
      WITH w AS (
        SELECT u.id, min(u.at) AS at FROM unnest(ids, dues) AS u (id, at) GROUP BY u.id
      ), changed AS (
        UPDATE webhook_endpoint_queues q SET ready_at = w.at
        FROM w, webhook_endpoints e
        WHERE w.id = q.endpoint_id AND e.id = q.endpoint_id AND e.paused_at IS NULL
          AND (q.ready_at IS NULL OR q.ready_at > w.at)
        RETURNING q.organization_id
      )
      SELECT array_agg(DISTINCT organization_id) INTO lowered FROM changed;
      IF lowered IS NULL THEN
        RETURN;
      END IF;
      PERFORM 1 FROM unnest(lowered) AS x (id) JOIN webhook_organization_queues o ON o.organization_id = x.id
        ORDER BY o.organization_id, o.stalled FOR KEY SHARE OF o;
      PERFORM 1 FROM webhook_organization_queues o
        JOIN (SELECT q.organization_id, q.stalled, min(q.ready_at) AS at
              FROM (SELECT DISTINCT id FROM unnest(ids) AS x (id)) x JOIN webhook_endpoint_queues q ON q.endpoint_id = x.id
              WHERE q.organization_id = ANY (lowered) AND q.ready_at IS NOT NULL GROUP BY 1, 2) m
          ON m.organization_id = o.organization_id AND m.stalled = o.stalled
        WHERE o.ready_at IS NULL OR o.ready_at > m.at
        ORDER BY o.organization_id, o.stalled FOR NO KEY UPDATE OF o;
      UPDATE webhook_organization_queues o SET ready_at = m.at
      FROM (SELECT q.organization_id, q.stalled, min(q.ready_at) AS at
              FROM (SELECT DISTINCT id FROM unnest(ids) AS x (id)) x JOIN webhook_endpoint_queues q ON q.endpoint_id = x.id
              WHERE q.organization_id = ANY (lowered) AND q.ready_at IS NOT NULL GROUP BY 1, 2) m
      WHERE m.organization_id = o.organization_id AND m.stalled = o.stalled
        AND (o.ready_at IS NULL OR o.ready_at > m.at);
    END $$`

  yield* sql`CREATE FUNCTION hearken_webhook_deliveries_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      ids text[];
      dues timestamptz[];
    BEGIN
      SELECT array_agg(endpoint_id), array_agg(next_attempt_at) INTO ids, dues FROM added WHERE status = 'pending';
      IF ids IS NOT NULL THEN
        PERFORM hearken_webhook_lower(ids, dues);
      END IF;
      RETURN NULL;
    END $$`
  yield* sql`CREATE FUNCTION hearken_webhook_deliveries_updated() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      ids text[];
      served_ids text[];
      served_ats timestamptz[];
    BEGIN
      SELECT array_agg(DISTINCT endpoint_id) INTO ids FROM changed;
      IF ids IS NULL THEN
        RETURN NULL;
      END IF;
      SELECT array_agg(endpoint_id), array_agg(leased_at) INTO served_ids, served_ats
        FROM changed WHERE leased_at IS NOT NULL;
      PERFORM hearken_webhook_settle(ids, COALESCE(served_ids, '{}'), COALESCE(served_ats, '{}'));
      RETURN NULL;
    END $$`
  yield* sql`CREATE FUNCTION hearken_webhook_deliveries_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM hearken_webhook_settle((SELECT array_agg(DISTINCT endpoint_id) FROM removed), '{}', '{}');
      RETURN NULL;
    END $$`
  yield* sql`CREATE TRIGGER webhook_deliveries_queue_insert AFTER INSERT ON webhook_deliveries
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION hearken_webhook_deliveries_inserted()`
  yield* sql`CREATE TRIGGER webhook_deliveries_queue_update AFTER UPDATE ON webhook_deliveries
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION hearken_webhook_deliveries_updated()`
  yield* sql`CREATE TRIGGER webhook_deliveries_queue_delete AFTER DELETE ON webhook_deliveries
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION hearken_webhook_deliveries_deleted()`

  // Every endpoint has its queue row, and its organization both lanes, from its creation on.
  yield* sql`CREATE FUNCTION hearken_webhook_endpoints_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO webhook_endpoint_queues (endpoint_id, organization_id, stalled)
        SELECT id, organization_id, stalled FROM added
        ON CONFLICT DO NOTHING;
      INSERT INTO webhook_organization_queues (organization_id, stalled)
        SELECT DISTINCT added.organization_id, lane.stalled FROM added, (VALUES (false), (true)) AS lane (stalled)
        ON CONFLICT DO NOTHING;
      RETURN NULL;
    END $$`
  // An endpoint that changes lane, or is paused or resumed.
  yield* sql`CREATE FUNCTION hearken_webhook_endpoints_updated() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      ids text[];
    BEGIN
      SELECT array_agg(n.id) INTO ids FROM changed n JOIN previous o ON o.id = n.id
        WHERE n.stalled <> o.stalled OR (n.paused_at IS NULL) <> (o.paused_at IS NULL);
      IF ids IS NOT NULL THEN
        PERFORM hearken_webhook_settle(ids, '{}', '{}');
      END IF;
      RETURN NULL;
    END $$`
  yield* sql`CREATE TRIGGER webhook_endpoints_queue_insert AFTER INSERT ON webhook_endpoints
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION hearken_webhook_endpoints_inserted()`
  yield* sql`CREATE TRIGGER webhook_endpoints_queue_update AFTER UPDATE ON webhook_endpoints
    REFERENCING OLD TABLE AS previous NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION hearken_webhook_endpoints_updated()`

  // The rows of what exists already.
  yield* sql`INSERT INTO webhook_endpoint_queues (endpoint_id, organization_id, stalled)
    SELECT id, organization_id, stalled FROM webhook_endpoints`
  yield* sql`INSERT INTO webhook_organization_queues (organization_id, stalled)
    SELECT DISTINCT e.organization_id, lane.stalled FROM webhook_endpoints e, (VALUES (false), (true)) AS lane (stalled)`
  yield* sql`SELECT hearken_webhook_settle(ARRAY(SELECT DISTINCT endpoint_id FROM webhook_deliveries WHERE status = 'pending'), '{}', '{}')`
})
