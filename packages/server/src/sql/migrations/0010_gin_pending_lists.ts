import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * A GIN index keeps recent inserts in a pending list that every lookup reads
 * whole; by default it may grow to 4 MB, and after an import a suggestion's
 * term lookups spent most of their ~150 ms rereading it. A 256 kB limit keeps
 * the list short at a small cost per insert (it is merged more often), and
 * the lists left by earlier inserts are merged now.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const indexes = yield* sql<{ name: string }>`SELECT indexname AS name FROM pg_indexes
    WHERE schemaname = current_schema() AND tablename = 'posts' AND indexdef LIKE '%USING gin%'`
  for (const { name } of indexes) {
    yield* sql`ALTER INDEX ${sql(name)} SET (gin_pending_list_limit = 256)`
    yield* sql`SELECT gin_clean_pending_list(${name}::regclass)`
  }
})
