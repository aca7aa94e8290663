import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * What the claim reads instead of walking every endpoint with pending
 * deliveries (decision 0026): one row per endpoint and one per organization
 * and lane, saying when the next of their deliveries can be claimed and when
 * a claim last took from them. Triggers on `webhook_deliveries` and
 * `webhook_endpoints` keep them, in the transaction that changes the
 * deliveries, so a restart or a crash loses nothing.
 *
 * - `stalled`: the lane. An endpoint whose last recorded attempt failed after
 *   a second or more without an answer (`webhook_endpoints.stalled`: it timed
 *   out, or hung before failing) is in the stalled lane; an organization has
 *   a row for each lane. A prompt failure (a 503 at once) is not stalled.
 * - `ready_at`: when one of its pending deliveries can be claimed (its due
 *   time, or the end of its lease when it is leased), or earlier, never later;
 *   NULL when none can (nothing pending, or the endpoint is paused). For an
 *   organization, at most the least of its endpoints' in that lane.
 * - `served_at`: the claim time of the last delivery taken from it.
 * - `turn`: the later of the two. Claims take organizations, and then their
 *   endpoints, in `turn` order among those with `turn <= now`: due ones,
 *   served longest ago first, with one index range scan and no probe of
 *   anything that is not ready.
 *
 * A delivery that can be claimed earlier than before (new, retried, released,
 * resumed) lowers its rows at once, in its own transaction; a delivery that
 * is leased or done leaves them early, and the next claim that finds nothing
 * behind a row settles it (recomputes it exactly), so no row stays early for
 * long and the claim does not walk it again. Under concurrency: lowering
 * takes FOR KEY SHARE before it reads (lowerings do not wait for each other),
 * settling takes FOR UPDATE before it reads, so a settle reads every lowering
 * committed before it, and one that comes after it lowers what it wrote.
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

  // Recomputes, exactly, the queue rows of the endpoints `ids` and then of their organizations
  // (and of the organizations `more_orgs`), locking them FOR UPDATE before reading: a writer
  // that lowered one (FOR KEY SHARE) has committed before this reads. An endpoint's ready_at is
  // the least of: the due time of its first pending delivery without a lease, and the end of
  // the lease or the due time, whichever is later, of the leased ones before it in due order.
  // Both are short walks of webhook_deliveries_endpoint_due_idx, past the leased deliveries at
  // the front of the endpoint's queue, never its whole backlog.
  yield* sql`CREATE FUNCTION hearken_webhook_settle(ids text[], more_orgs text[])
    RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
      orgs text[];
    BEGIN
      PERFORM 1 FROM (SELECT DISTINCT id FROM unnest(ids) AS x (id)) x
        JOIN webhook_endpoint_queues q ON q.endpoint_id = x.id
        ORDER BY q.endpoint_id FOR UPDATE OF q;
      WITH fresh AS (
        SELECT q.endpoint_id, e.stalled, CASE WHEN e.paused_at IS NULL THEN LEAST(f.at, l.at) END AS ready_at
        FROM (SELECT DISTINCT id FROM unnest(ids) AS x (id)) x
        JOIN webhook_endpoint_queues q ON q.endpoint_id = x.id
        JOIN webhook_endpoints e ON e.id = q.endpoint_id
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
        UPDATE webhook_endpoint_queues q SET stalled = fresh.stalled, ready_at = fresh.ready_at
        FROM fresh
        WHERE q.endpoint_id = fresh.endpoint_id AND (q.stalled, q.ready_at) IS DISTINCT FROM (fresh.stalled, fresh.ready_at)
        RETURNING q.organization_id
      )
      SELECT array_agg(organization_id) INTO orgs FROM changed;
      orgs := COALESCE(orgs, '{}') || COALESCE(more_orgs, '{}');
      PERFORM 1 FROM (SELECT DISTINCT id FROM unnest(orgs) AS x (id)) x
        JOIN webhook_organization_queues o ON o.organization_id = x.id
        ORDER BY o.organization_id, o.stalled FOR UPDATE OF o;
      UPDATE webhook_organization_queues o SET ready_at = first.ready_at
      FROM (SELECT DISTINCT id FROM unnest(orgs) AS x (id)) x
      JOIN webhook_organization_queues o2 ON o2.organization_id = x.id
      LEFT JOIN LATERAL (
        SELECT q.ready_at FROM webhook_endpoint_queues q
        WHERE q.organization_id = o2.organization_id AND q.stalled = o2.stalled AND q.ready_at IS NOT NULL
        ORDER BY q.ready_at LIMIT 1
      ) first ON true
      WHERE o.organization_id = o2.organization_id AND o.stalled = o2.stalled
        AND o.ready_at IS DISTINCT FROM first.ready_at;
    END $$`

  // What every change to deliveries does, without waiting for another: deliveries that can be
  // claimed earlier (new, retried, released, resumed) lower their endpoint's ready_at, and its
  // organization's, if it was later; a claim moves served_at up to its time. A delivery leased
  // or gone leaves its row early (ready though nothing is): the next claim to find it so settles
  // it. FOR KEY SHARE before reading, so that a settle waits for this transaction; FOR NO KEY
  // UPDATE, in id order, only on the rows that change.
  yield* sql`CREATE FUNCTION hearken_webhook_touch(lower_ids text[], lower_ats timestamptz[], served_ids text[], served_ats timestamptz[])
    RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
      org_ids text[];
      org_lanes boolean[];
      org_ready timestamptz[];
      org_served timestamptz[];
    BEGIN
      PERFORM 1 FROM (SELECT DISTINCT id FROM unnest(lower_ids) AS x (id)) x
        JOIN webhook_endpoint_queues q ON q.endpoint_id = x.id
        ORDER BY q.endpoint_id FOR KEY SHARE OF q;
      PERFORM 1 FROM hearken_webhook_touched(lower_ids, lower_ats, served_ids, served_ats) t
        JOIN webhook_endpoint_queues q ON q.endpoint_id = t.id
        WHERE t.ready_at IS DISTINCT FROM q.ready_at OR t.served_at > q.served_at
        ORDER BY q.endpoint_id FOR NO KEY UPDATE OF q;
      WITH changed AS (
        UPDATE webhook_endpoint_queues q
        SET ready_at = t.ready_at, served_at = greatest(q.served_at, t.served_at)
        FROM hearken_webhook_touched(lower_ids, lower_ats, served_ids, served_ats) t
        WHERE q.endpoint_id = t.id AND (t.ready_at IS DISTINCT FROM q.ready_at OR t.served_at > q.served_at)
        RETURNING q.organization_id, q.stalled, q.ready_at, t.served_at
      )
      SELECT array_agg(organization_id ORDER BY organization_id, stalled), array_agg(stalled ORDER BY organization_id, stalled),
          array_agg(ready_at ORDER BY organization_id, stalled), array_agg(served_at ORDER BY organization_id, stalled)
        INTO org_ids, org_lanes, org_ready, org_served
        FROM (SELECT organization_id, stalled, min(ready_at) AS ready_at, max(served_at) AS served_at FROM changed GROUP BY 1, 2) g;
      IF org_ids IS NULL THEN
        RETURN;
      END IF;
      PERFORM 1 FROM unnest(org_ids, org_lanes) AS x (id, stalled)
        JOIN webhook_organization_queues o ON o.organization_id = x.id AND o.stalled = x.stalled
        ORDER BY o.organization_id, o.stalled FOR KEY SHARE OF o;
      PERFORM 1 FROM unnest(org_ids, org_lanes, org_ready, org_served) AS x (id, stalled, ready_at, served_at)
        JOIN webhook_organization_queues o ON o.organization_id = x.id AND o.stalled = x.stalled
        WHERE x.ready_at < o.ready_at OR (o.ready_at IS NULL AND x.ready_at IS NOT NULL) OR x.served_at > o.served_at
        ORDER BY o.organization_id, o.stalled FOR NO KEY UPDATE OF o;
      UPDATE webhook_organization_queues o
      SET ready_at = CASE WHEN x.ready_at < o.ready_at OR o.ready_at IS NULL THEN COALESCE(x.ready_at, o.ready_at) ELSE o.ready_at END,
        served_at = greatest(o.served_at, x.served_at)
      FROM unnest(org_ids, org_lanes, org_ready, org_served) AS x (id, stalled, ready_at, served_at)
      WHERE o.organization_id = x.id AND o.stalled = x.stalled
        AND (x.ready_at < o.ready_at OR (o.ready_at IS NULL AND x.ready_at IS NOT NULL) OR x.served_at > o.served_at);
    END $$`
  // The endpoint rows `hearken_webhook_touch` would write: each touched endpoint's ready_at,
  // lowered to the earliest of `lower_ats` for it unless the endpoint is paused, and the latest
  // of `served_ats` for it. Read after the rows are locked.
  yield* sql`CREATE FUNCTION hearken_webhook_touched(lower_ids text[], lower_ats timestamptz[], served_ids text[], served_ats timestamptz[])
    RETURNS TABLE (id text, ready_at timestamptz, served_at timestamptz) LANGUAGE sql STABLE AS $$
      WITH w AS (
        SELECT u.id, min(u.at) AS at FROM unnest(lower_ids, lower_ats) AS u (id, at) GROUP BY u.id
      ), s AS (
        SELECT u.id, max(u.at) AS at FROM unnest(served_ids, served_ats) AS u (id, at) GROUP BY u.id
      ), ids AS (
        SELECT w.id FROM w UNION SELECT s.id FROM s
      )
      SELECT q.endpoint_id,
        CASE WHEN w.at IS NOT NULL AND e.paused_at IS NULL AND (q.ready_at IS NULL OR q.ready_at > w.at) THEN w.at ELSE q.ready_at END,
        s.at
      FROM ids JOIN webhook_endpoint_queues q ON q.endpoint_id = ids.id
      JOIN webhook_endpoints e ON e.id = q.endpoint_id
      LEFT JOIN w ON w.id = q.endpoint_id
      LEFT JOIN s ON s.id = q.endpoint_id
    $$`

  yield* sql`CREATE FUNCTION hearken_webhook_deliveries_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      ids text[];
      ats timestamptz[];
    BEGIN
      SELECT array_agg(endpoint_id), array_agg(next_attempt_at) INTO ids, ats FROM added WHERE status = 'pending';
      IF ids IS NOT NULL THEN
        PERFORM hearken_webhook_touch(ids, ats, '{}', '{}');
      END IF;
      RETURN NULL;
    END $$`
  // A delivery pending and claimable earlier than before lowers; a new lease serves.
  yield* sql`CREATE FUNCTION hearken_webhook_deliveries_updated() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      lower_ids text[];
      lower_ats timestamptz[];
      served_ids text[];
      served_ats timestamptz[];
    BEGIN
      SELECT array_agg(n.endpoint_id), array_agg(n.next_attempt_at) INTO lower_ids, lower_ats
        FROM changed n JOIN previous o ON o.id = n.id
        WHERE n.status = 'pending' AND n.lease_until IS NULL
          AND (o.status <> 'pending' OR o.lease_until IS NOT NULL OR n.next_attempt_at < o.next_attempt_at);
      SELECT array_agg(n.endpoint_id), array_agg(n.leased_at) INTO served_ids, served_ats
        FROM changed n JOIN previous o ON o.id = n.id
        WHERE n.leased_at IS DISTINCT FROM o.leased_at AND n.leased_at IS NOT NULL;
      IF lower_ids IS NOT NULL OR served_ids IS NOT NULL THEN
        PERFORM hearken_webhook_touch(COALESCE(lower_ids, '{}'), COALESCE(lower_ats, '{}'), COALESCE(served_ids, '{}'), COALESCE(served_ats, '{}'));
      END IF;
      RETURN NULL;
    END $$`
  yield* sql`CREATE TRIGGER webhook_deliveries_queue_insert AFTER INSERT ON webhook_deliveries
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION hearken_webhook_deliveries_inserted()`
  yield* sql`CREATE TRIGGER webhook_deliveries_queue_update AFTER UPDATE ON webhook_deliveries
    REFERENCING OLD TABLE AS previous NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION hearken_webhook_deliveries_updated()`

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
        PERFORM hearken_webhook_settle(ids, '{}');
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
  yield* sql`SELECT hearken_webhook_settle(ARRAY(SELECT DISTINCT endpoint_id FROM webhook_deliveries WHERE status = 'pending'), '{}')`
})
