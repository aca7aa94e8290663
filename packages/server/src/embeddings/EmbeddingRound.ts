import { Clock, Context, Effect, Layer, Option, Result, type Tracer } from "effect"
import { randomUUID } from "node:crypto"
import { EmbeddingsConfig } from "../config/embeddings.js"
import { linkToSpans } from "../observability/Tracing.js"
import { Sanitizer } from "../content/Sanitizer.js"
import type { SqlError } from "effect/sql"
import { type ClaimedPost, EmbeddingRepo } from "./EmbeddingRepo.js"
import { embeddingInput, Embeddings, type Model, type Vector } from "./Embeddings.js"
import { EmbeddingSignal } from "./EmbeddingSignal.js"

/** PostgreSQL's SQLSTATE of a failed statement (such as 22003, out of range), without its text. */
const sqlState = (error: SqlError.SqlError) => {
  const code = (error.reason.cause as { readonly code?: unknown } | undefined)?.code
  return typeof code === "string" ? `SQLSTATE ${code}` : error.reason._tag
}

/** Posts embedded in one call. */
export const batchSize = 32
/** No post waits longer than this between two tries. */
export const maxRetryMs = 60 * 60_000

export interface StepResult {
  /** Posts leased and sent to the API. */
  readonly claimed: number
  /** Whether the API answered; on failure the posts wait for their backoff. */
  readonly ok: boolean
}

/** One round of embedding: lease due posts, embed them in one call, store the vectors or the failure. */
export class EmbeddingRound extends Context.Service<EmbeddingRound, {
  readonly model: Model
  /**
   * `postIds`: only those (just created); otherwise any due post (the
   * back-fill). The round's span links to `links`, the spans of the requests
   * that created them.
   */
  readonly run: (postIds?: ReadonlyArray<string>, links?: ReadonlyArray<Tracer.AnySpan>) => Effect.Effect<StepResult>
}>()("hearken/EmbeddingRound") {
  /** Needs `Embeddings`, the `EmbeddingRepo`, the `Sanitizer` and the `EmbeddingSignal` (the one `Feedback` tells of new posts). */
  static readonly layerNoDeps = Layer.effect(
    EmbeddingRound,
    Effect.gen(function*() {
      const config = yield* EmbeddingsConfig
      const embeddings = yield* Embeddings
      const repo = yield* EmbeddingRepo
      const sanitizer = yield* Sanitizer
      const signal = yield* EmbeddingSignal
      if (Option.isNone(embeddings.model)) return yield* Effect.die(new Error("EmbeddingRound needs EMBEDDINGS_URL"))
      const model = embeddings.model.value
      // Long enough for a call, its splits and the writes; a worker that died gives its posts up after it.
      const leaseMs = config.embeddingsBackfillTimeoutMs * 2 + 30_000

      /** Pushes the posts' next try out by the backoff, with `error` as their `last_error`. */
      const failPosts = (posts: ReadonlyArray<ClaimedPost>, token: string, error: string) =>
        posts.length === 0 ? Effect.void : Clock.currentTimeMillis.pipe(
          Effect.flatMap((nowMs) =>
            repo.fail({
              model,
              nowMs,
              token,
              postIds: posts.map((post) => post.postId),
              error,
              baseMs: config.embeddingsRetryBaseMs,
              maxMs: maxRetryMs
            })
          )
        )

      /**
       * Stores the vectors in one statement; if the database refuses it (a
       * value pgvector will not take that slipped past `vectorProblem`), one
       * by one, so that the refused vector fails only its own post.
       */
      const store = (rows: ReadonlyArray<{ readonly post: ClaimedPost; readonly vector: Vector }>, token: string) =>
        repo.store(model, token, rows).pipe(
          Effect.catchTag("SqlError", () =>
            Effect.forEach(rows, (row) =>
              repo.store(model, token, [row]).pipe(
                Effect.catchTag("SqlError", (error) => failPosts([row.post], token, `the database refused its vector (${sqlState(error)})`).pipe(Effect.as(0)))
              )).pipe(Effect.map((stored) => stored.reduce((a, b) => a + b, 0)))
          ),
          Effect.tap((stored) => stored > 0 ? signal.vectorsStored : Effect.void)
        )

      /**
       * Embeds `posts` (each with its input text, computed once) in one call
       * and stores the vectors, or records the failure. A post whose vector
       * the answer got wrong fails alone (decision 0028); the others are
       * stored. A batch the API rejects (one text it cannot take) is split in
       * halves until that post is alone, so it does not hold back the others.
       * Yields whether the API was answering.
       */
      const embedBatch = (
        posts: ReadonlyArray<{ readonly post: ClaimedPost; readonly input: string }>,
        token: string
      ): Effect.Effect<boolean, SqlError.SqlError> =>
        embeddings.embedEach(posts.map(({ input }) => input), config.embeddingsBackfillTimeoutMs).pipe(
          Effect.matchEffect({
            onSuccess: (vectors) => {
              const usable: Array<{ readonly post: ClaimedPost; readonly vector: Vector }> = []
              const unusable = new Map<string, Array<ClaimedPost>>()
              posts.forEach(({ post }, i) => {
                const vector = vectors[i]!
                if (Result.isSuccess(vector)) usable.push({ post, vector: vector.success })
                else unusable.set(vector.failure, [...(unusable.get(vector.failure) ?? []), post])
              })
              return Effect.forEach(unusable, ([reason, failed]) => failPosts(failed, token, reason), { discard: true }).pipe(
                Effect.andThen(store(usable, token)),
                // An answer with no usable vector says the API is not working: the loop slows down.
                Effect.as(usable.length > 0)
              )
            },
            onFailure: (error) => {
              if (error.rejected === true && posts.length > 1) {
                const half = Math.ceil(posts.length / 2)
                return Effect.zipWith(embedBatch(posts.slice(0, half), token), embedBatch(posts.slice(half), token), (a, b) => a && b)
              }
              return failPosts(posts.map(({ post }) => post), token, error.reason).pipe(
                // A post the API refuses says nothing about the API: the loop need not slow down for it.
                Effect.as(error.rejected === true)
              )
            }
          })
        )

      const run = Effect.fn("EmbeddingRound.run")(function*(postIds?: ReadonlyArray<string>, links: ReadonlyArray<Tracer.AnySpan> = []) {
        yield* linkToSpans(links)
        const token = randomUUID()
        return yield* Effect.gen(function*() {
          const nowMs = yield* Clock.currentTimeMillis
          const posts = yield* repo.claim({ model, nowMs, limit: batchSize, leaseMs, token, postIds })
          if (posts.length === 0) return { claimed: 0, ok: true }
          const withInputs = posts.map((post) => ({ post, input: embeddingInput(post.title, sanitizer.text(post.content)) }))
          const ok = yield* embedBatch(withInputs, token).pipe(
            // The database failed after the lease: what is still leased gets its try counted and its backoff,
            // never a lease that runs out with nothing said. Only a database that cannot record even that leaves it so.
            Effect.catchTag("SqlError", (error) => failPosts(posts, token, `the database failed (${sqlState(error)})`).pipe(Effect.as(false)))
          )
          return { claimed: posts.length, ok }
        }).pipe(
          // Stopped mid-round (a shutdown): whatever it leased is free for the next worker at once.
          Effect.onInterrupt(() => Effect.ignore(repo.release(model, token)))
        )
      }, Effect.orDie)

      return EmbeddingRound.of({ model, run })
    })
  )

  static readonly layer = this.layerNoDeps.pipe(
    Layer.provide([Embeddings.layer, EmbeddingRepo.layer, Sanitizer.layer, EmbeddingSignal.layer])
  )
}
