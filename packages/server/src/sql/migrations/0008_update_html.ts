import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Changelog content as served: sanitized the first time an entry is served
 * (docs/api.md: "Limits") and kept, keyed by the authored HTML's hash and the
 * sanitizer's version, so that serving a long changelog again costs a read,
 * not a sanitizer pass per entry. Writing here changes no ETag: the version
 * triggers are on `updates`.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE update_html (
    update_id text PRIMARY KEY REFERENCES updates (id) ON DELETE CASCADE,
    source_hash text NOT NULL,
    sanitizer integer NOT NULL,
    html text NOT NULL
  )`
})
