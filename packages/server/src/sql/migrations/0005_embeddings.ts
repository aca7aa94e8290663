import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Post embeddings (decision 0009): one row per post and model, tagged with
 * the model's name and vector size. `embedding` has no fixed size here; each
 * configured model gets its own partial HNSW index on the column cast to its
 * size, created by the embedder at start-up. A row is also the post's place
 * in the embedding queue: `source_hash` says what text the vector is of,
 * `lease_*` who is embedding it now, `retry_at` when a failed one is tried again.
 * `posts.text_hash` is what `source_hash` is compared with: computed once per
 * write, so that finding changed posts reads no content.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE posts ADD COLUMN text_hash text GENERATED ALWAYS AS (md5(title || E'\n\n' || content)) STORED`
  yield* sql`CREATE TABLE post_embeddings (
    post_id text NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
    model text NOT NULL,
    dimensions integer NOT NULL,
    embedding vector,
    source_hash text,
    attempts integer NOT NULL DEFAULT 0,
    retry_at timestamptz,
    last_error text,
    lease_until timestamptz,
    lease_token text,
    embedded_at timestamptz,
    PRIMARY KEY (post_id, model, dimensions)
  )`
})
