import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * ANALYZE keeps the most common lexemes of `posts.lexicon` with their share
 * of the rows: at most ten times the column's statistics target, from a
 * sample of 300 times it. Suggestions read them to know a large board's
 * common features before fetching any (decision 0039). At the default target
 * (100) a board of a million synthetic posts had only the lexemes in 1,800
 * posts or more listed, and each feature under that cost its postings on the
 * first drafts after a restart; at 10,000 (the most PostgreSQL allows), those
 * in 129 or more, 100,000 lexemes. ANALYZE then reads up to 3 million rows:
 * 72 s for a million posts on a 2-core machine, in the background
 * (autovacuum) or after an import (docs/operations.md).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE posts ALTER COLUMN lexicon SET STATISTICS 10000`
})
