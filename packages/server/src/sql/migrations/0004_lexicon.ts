import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Suggestions search a lexicon of language-neutral features per post
 * (decision 0008): `lexicon` holds every feature, `title_lexicon` the
 * title's. Both are computed by the application: NULL until then, and empty
 * for private posts. The first search columns go: nothing reads them.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE posts ADD COLUMN lexicon tsvector, ADD COLUMN title_lexicon tsvector`
  yield* sql`CREATE INDEX posts_lexicon_idx ON posts USING gin (lexicon)`
  yield* sql`CREATE INDEX posts_lexicon_missing_idx ON posts (id) WHERE lexicon IS NULL`
  yield* sql`DROP INDEX posts_title_trgm_idx`
  yield* sql`ALTER TABLE posts DROP COLUMN search`
})
