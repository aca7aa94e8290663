import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * ANALYZE keeps the most common lexemes of `posts.lexicon` with their share
 * of the rows: ten times the column's statistics target, from a sample of 300
 * times it. Suggestions read them to know a large board's common features
 * before fetching any (decision 0039). At the default target (100) only
 * lexemes in about 0.4 % of the rows are kept, 3,700 posts of a million,
 * and each feature under that costs its postings; at 1,000, those in about
 * 0.04 %, 400 posts of a million. ANALYZE samples 300,000 rows instead of
 * 30,000: seconds, in the background (autovacuum) or after an import.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE posts ALTER COLUMN lexicon SET STATISTICS 1000`
})
