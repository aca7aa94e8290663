import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * What a conditional GET compares (decision 0010): per organization, a
 * counter for its boards and one for its changelog, bumped by triggers on
 * every write by any process, and the times of changelog entries that were
 * not yet due when last written, so that an entry coming due changes the tag
 * although nothing was written. `epoch` is new whenever the row is, so that
 * counters that start again never repeat an old tag. No foreign key: an
 * organization being deleted still fires its boards' triggers.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE organization_versions (
    organization_id text PRIMARY KEY,
    epoch text NOT NULL DEFAULT md5(random()::text || clock_timestamp()::text),
    boards bigint NOT NULL DEFAULT 0,
    updates bigint NOT NULL DEFAULT 0,
    scheduled timestamptz[] NOT NULL DEFAULT '{}'
  )`

  yield* sql`CREATE FUNCTION hearken_bump_version() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      orgs text[] := ARRAY[]::text[];
      org text;
    BEGIN
      IF TG_OP IN ('UPDATE', 'DELETE') THEN orgs := orgs || OLD.organization_id; END IF;
      IF TG_OP IN ('INSERT', 'UPDATE') AND NOT (NEW.organization_id = ANY (orgs)) THEN orgs := orgs || NEW.organization_id; END IF;
      FOREACH org IN ARRAY orgs LOOP
        IF TG_TABLE_NAME = 'boards' THEN
          INSERT INTO organization_versions AS v (organization_id, boards) VALUES (org, 1)
          ON CONFLICT (organization_id) DO UPDATE SET boards = v.boards + 1;
        ELSE
          INSERT INTO organization_versions AS v (organization_id, updates, scheduled)
          VALUES (org, 1, ARRAY(
            SELECT u.published_at FROM updates u WHERE u.organization_id = org AND u.published_at > now() ORDER BY 1))
          ON CONFLICT (organization_id) DO UPDATE SET updates = v.updates + 1, scheduled = EXCLUDED.scheduled;
        END IF;
      END LOOP;
      RETURN NULL;
    END $$`

  for (const table of ["boards", "updates"]) {
    yield* sql.unsafe(`CREATE TRIGGER ${table}_version_written AFTER INSERT OR DELETE ON ${table}
      FOR EACH ROW EXECUTE FUNCTION hearken_bump_version()`)
    // A re-import that writes the same values changes nothing a client sees.
    yield* sql.unsafe(`CREATE TRIGGER ${table}_version_changed AFTER UPDATE ON ${table}
      FOR EACH ROW WHEN (OLD.* IS DISTINCT FROM NEW.*) EXECUTE FUNCTION hearken_bump_version()`)
  }
})
