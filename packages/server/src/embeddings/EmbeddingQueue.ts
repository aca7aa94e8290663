import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, type SqlError, SqlSchema } from "effect/sql"
import { iso } from "../sql/iso.js"
import { Model, type Vector, vectorLiteral } from "./Vectors.js"
import { decoded } from "../sql/SqlFailure.js"

/** A post leased for embedding: its text as it is now, and the hash that will say so. */
const ClaimedPost = Schema.Struct({
  postId: Schema.String,
  title: Schema.String,
  /** Sanitized HTML. */
  content: Schema.String,
  sourceHash: Schema.String
})
export type ClaimedPost = typeof ClaimedPost.Type

export interface Claim {
  readonly model: Model
  readonly nowMs: number
  readonly limit: number
  readonly leaseMs: number
  readonly token: string
  /** Only these posts (just created); otherwise any post that is due (the back-fill). */
  readonly postIds?: ReadonlyArray<string> | undefined
}

export interface Failure {
  readonly model: Model
  readonly nowMs: number
  readonly token: string
  readonly postIds: ReadonlyArray<string>
  readonly error: string
  /** A post's n-th failure is retried `min(baseMs × 2^(n−1), maxMs)` later. */
  readonly baseMs: number
  readonly maxMs: number
}

/** The hash of a post's title and content (a generated column): a post whose text changes is due again. */
const sourceHash = "p.text_hash"

/** A lease's posts, of the model. */
const Lease = Schema.Struct({ model: Model, token: Schema.String })

const PostId = Schema.Struct({ post_id: Schema.String })
const Count = Schema.Struct({ posts: Schema.Number })

/** The embedding queue in `post_embeddings` (decision 0009): leases, vectors stored, failures and their backoff. */
export class EmbeddingQueue extends Context.Service<EmbeddingQueue, {
  /**
   * Leases up to `limit` public posts of public boards whose embedding for
   * the model is missing or of an older text, and not waiting for a retry nor
   * leased by another worker. Two workers never hold the same post.
   */
  readonly claim: (claim: Claim) => Effect.Effect<ReadonlyArray<ClaimedPost>, SqlError.SqlError>
  /** Stores vectors of posts this lease holds; yields how many were stored. */
  readonly store: (model: Model, token: string, rows: ReadonlyArray<{ readonly post: ClaimedPost; readonly vector: Vector }>) => Effect.Effect<number, SqlError.SqlError>
  /** Gives back every post this lease holds, untouched: a worker that stops lets another take them at once. */
  readonly release: (model: Model, token: string) => Effect.Effect<void, SqlError.SqlError>
  /** Gives the posts back with their next try pushed out by the backoff. */
  readonly fail: (failure: Failure) => Effect.Effect<void, SqlError.SqlError>
  /**
   * How many public posts of public boards have no embedding of their
   * current text for the model, database-wide: what the back-fill has left (the metrics' gauge,
   * `EmbeddingGauges.ts`).
   */
  readonly backlog: (model: Model) => Effect.Effect<number, SqlError.SqlError>
}>()("hearken/EmbeddingQueue") {
  static readonly layer = Layer.effect(
    EmbeddingQueue,
    Effect.gen(function*() {
      // The embedding worker's, on the primary.
      const sql = yield* SqlClient.SqlClient

      const claimDue = SqlSchema.findAll({
        Request: Schema.Struct({
          model: Model,
          now: Schema.String,
          leaseUntil: Schema.String,
          limit: Schema.Number,
          token: Schema.String,
          postIds: Schema.NullOr(Schema.Array(Schema.String))
        }),
        Result: ClaimedPost,
        execute: ({ leaseUntil, limit, model, now, postIds, token }) => {
          const only = postIds === null ? sql`` : sql`AND p.id IN ${sql.in(postIds)}`
          return sql`WITH due AS (
            SELECT p.id FROM posts p
            -- Only what can be suggested leaves for the API: a public post on a public board (docs/api.md:
            -- "Suggestions by meaning: embeddings"). A board made private stops its posts at once.
            JOIN boards b ON b.id = p.board_id AND b.visibility = 'public'
            LEFT JOIN post_embeddings e ON e.post_id = p.id AND e.model = ${model.name} AND e.dimensions = ${model.dimensions}
            WHERE p.visibility = 'public' ${only}
              AND (e.post_id IS NULL OR (
                e.source_hash IS DISTINCT FROM ${sql.literal(sourceHash)}
                AND (e.retry_at IS NULL OR e.retry_at <= ${now}::timestamptz)
                AND (e.lease_until IS NULL OR e.lease_until <= ${now}::timestamptz)))
            -- Never tried first, newest first (the likeliest duplicates), then changed ones, then the
            -- longest-waiting retries: a failing few never starve the rest.
            ORDER BY e.post_id IS NOT NULL, e.retry_at NULLS FIRST, p.created_at DESC, p.id
            LIMIT ${limit}
            -- Another worker's claim in flight holds its posts: take the next ones instead of the same.
            FOR NO KEY UPDATE OF p SKIP LOCKED
          ), leased AS (
            INSERT INTO post_embeddings (post_id, model, dimensions, lease_until, lease_token)
            SELECT id, ${model.name}, ${model.dimensions}, ${leaseUntil}::timestamptz, ${token} FROM due
            ON CONFLICT (post_id, model, dimensions) DO UPDATE
              SET lease_until = EXCLUDED.lease_until, lease_token = EXCLUDED.lease_token
              -- Still due as the latest committed row says: a worker that stored or failed it meanwhile wins.
              WHERE (post_embeddings.lease_until IS NULL OR post_embeddings.lease_until <= ${now}::timestamptz)
                AND (post_embeddings.retry_at IS NULL OR post_embeddings.retry_at <= ${now}::timestamptz)
                AND post_embeddings.source_hash IS DISTINCT FROM (SELECT text_hash FROM posts WHERE id = post_embeddings.post_id)
            RETURNING post_id
          )
          SELECT p.id AS "postId", p.title, p.content, ${sql.literal(sourceHash)} AS "sourceHash"
          FROM leased JOIN posts p ON p.id = leased.post_id`
        }
      })

      const claim = Effect.fn("EmbeddingQueue.claim")((c: Claim) =>
        decoded(claimDue({
          model: c.model,
          now: iso(c.nowMs),
          leaseUntil: iso(c.nowMs + c.leaseMs),
          limit: c.limit,
          token: c.token,
          postIds: c.postIds ?? null
        }))
      )

      const storeVectors = SqlSchema.findAll({
        Request: Schema.Struct({
          lease: Lease,
          rows: Schema.Array(Schema.Struct({ id: Schema.String, hash: Schema.String, embedding: Schema.String }))
        }),
        Result: PostId,
        execute: ({ lease: { model, token }, rows }) =>
          sql`UPDATE post_embeddings e
            SET embedding = v.embedding::vector, source_hash = v.hash, attempts = 0, retry_at = NULL, last_error = NULL,
              lease_until = NULL, lease_token = NULL, embedded_at = now()
            FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS v(id text, hash text, embedding text)
            WHERE e.post_id = v.id AND e.model = ${model.name} AND e.dimensions = ${model.dimensions} AND e.lease_token = ${token}
            RETURNING e.post_id`
      })

      const store = Effect.fn("EmbeddingQueue.store")(
        (model: Model, token: string, rows: ReadonlyArray<{ readonly post: ClaimedPost; readonly vector: Vector }>) =>
          rows.length === 0 ? Effect.succeed(0) : decoded(storeVectors({
            lease: { model, token },
            rows: rows.map(({ post, vector }) => ({ id: post.postId, hash: post.sourceHash, embedding: vectorLiteral(vector) }))
          })).pipe(Effect.map((updated) => updated.length))
      )

      const failPosts = SqlSchema.void({
        Request: Schema.Struct({
          lease: Lease,
          postIds: Schema.Array(Schema.String),
          now: Schema.String,
          error: Schema.String,
          baseMs: Schema.Number,
          maxMs: Schema.Number
        }),
        execute: ({ baseMs, error, lease: { model, token }, maxMs, now, postIds }) =>
          sql`UPDATE post_embeddings
          SET attempts = attempts + 1, last_error = ${error}, lease_until = NULL, lease_token = NULL,
            retry_at = ${now}::timestamptz + least(${baseMs}::float8 * power(2, least(attempts, 40)), ${maxMs}::float8) * interval '1 millisecond'
          WHERE post_id IN ${sql.in(postIds)} AND model = ${model.name} AND dimensions = ${model.dimensions}
            AND lease_token = ${token}`
      })

      const fail = Effect.fn("EmbeddingQueue.fail")((f: Failure) =>
        f.postIds.length === 0 ? Effect.void : decoded(failPosts({
          lease: { model: f.model, token: f.token },
          postIds: f.postIds,
          now: iso(f.nowMs),
          error: f.error.slice(0, 500),
          baseMs: f.baseMs,
          maxMs: f.maxMs
        }))
      )

      const releaseLease = SqlSchema.void({
        Request: Lease,
        execute: ({ model, token }) =>
          sql`UPDATE post_embeddings SET lease_until = NULL, lease_token = NULL
          WHERE lease_token = ${token} AND model = ${model.name} AND dimensions = ${model.dimensions}`
      })

      const release = Effect.fn("EmbeddingQueue.release")((model: Model, token: string) => decoded(releaseLease({ model, token })))

      const countBacklog = SqlSchema.findAll({
        Request: Model,
        Result: Count,
        execute: (model) =>
          sql`SELECT count(*)::int AS posts FROM posts p
          JOIN boards b ON b.id = p.board_id AND b.visibility = 'public'
          WHERE p.visibility = 'public' AND NOT EXISTS (
            SELECT 1 FROM post_embeddings e WHERE e.post_id = p.id AND e.model = ${model.name} AND e.dimensions = ${model.dimensions}
              AND e.source_hash = p.text_hash)`
      })

      // Not `Effect.fn`: read on every scrape, which makes no span of its own (its statement's is the only one).
      const backlog = (model: Model) =>
        decoded(countBacklog(model)).pipe(Effect.map((rows) => rows[0]?.posts ?? 0))

      return EmbeddingQueue.of({ claim, store, release, fail, backlog })
    })
  )
}
