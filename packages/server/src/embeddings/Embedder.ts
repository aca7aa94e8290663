import { Cause, Clock, Context, Effect, Layer, Option, Queue, type Tracer } from "effect"
import { randomUUID } from "node:crypto"
import { ServerConfig } from "../config.js"
import { exportedSpan, linkToSpans } from "../observability/Tracing.js"
import { Sanitizer } from "../content/Sanitizer.js"
import type { SqlError } from "effect/sql"
import { type ClaimedPost, EmbeddingRepo } from "./EmbeddingRepo.js"
import { embeddingInput, Embeddings, type Model } from "./Embeddings.js"

/** Posts embedded in one call. */
export const batchSize = 32
/** The back-fill looks for posts that are due (imported, changed, failed earlier) at least this often. */
export const maxSweepMs = 10_000
/** No post waits longer than this between two tries. */
export const maxRetryMs = 60 * 60_000
/** The loop waits at most this long after a failed call: new posts are tried again soon after the API is back. */
export const maxLoopBackoffMs = 60_000
/** New posts remembered for the worker; past this the oldest are left to the next sweep. */
const signalCapacity = 4_096

/** A post just created, and the span of the request that created it (when spans are exported) to link to. */
export interface CreatedPost {
  readonly postId: string
  readonly span: Tracer.AnySpan | undefined
}

/**
 * Told of each post created, after its transaction commits, so that it is
 * embedded at once; and tells of vectors stored, so that the boards'
 * calibration (decision 0023) follows at once.
 */
export class EmbeddingSignal extends Context.Service<EmbeddingSignal, {
  readonly postCreated: (postId: string) => Effect.Effect<void>
  /** The posts created since the last call; waits for at least one. */
  readonly created: Effect.Effect<ReadonlyArray<CreatedPost>>
  /** The posts created since the last call, perhaps none; does not wait. */
  readonly poll: Effect.Effect<ReadonlyArray<CreatedPost>>
  readonly vectorsStored: Effect.Effect<void>
  /** Waits until vectors were stored since the last call (at once if they were). */
  readonly stored: Effect.Effect<void>
}>()("hearken/EmbeddingSignal") {
  /** A queue when embeddings are configured; otherwise nothing is remembered. */
  static readonly layer = Layer.effect(
    EmbeddingSignal,
    Effect.gen(function*() {
      const config = yield* ServerConfig
      if (Option.isNone(config.embeddings)) {
        return EmbeddingSignal.of({
          postCreated: () => Effect.void,
          created: Effect.never,
          poll: Effect.succeed([]),
          vectorsStored: Effect.void,
          stored: Effect.never
        })
      }
      const queue = yield* Queue.sliding<CreatedPost>(signalCapacity)
      // One slot: many stores before the next wait are one wake-up.
      const stores = yield* Queue.sliding<void>(1)
      return EmbeddingSignal.of({
        postCreated: (postId) =>
          exportedSpan.pipe(Effect.flatMap((span) => Queue.offer(queue, { postId, span })), Effect.asVoid),
        created: Queue.takeAll(queue),
        poll: Queue.clear(queue),
        vectorsStored: Queue.offer(stores, undefined).pipe(Effect.asVoid),
        stored: Queue.take(stores)
      })
    })
  )
}

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
  static readonly layer = Layer.effect(
    EmbeddingRound,
    Effect.gen(function*() {
      const config = yield* ServerConfig
      const embeddings = yield* Embeddings
      const repo = yield* EmbeddingRepo
      const sanitizer = yield* Sanitizer
      const signal = yield* EmbeddingSignal
      if (Option.isNone(embeddings.model)) return yield* Effect.die(new Error("EmbeddingRound needs EMBEDDINGS_URL"))
      const model = embeddings.model.value
      // Long enough for a call, its splits and the writes; a worker that died gives its posts up after it.
      const leaseMs = config.embeddingsBackfillTimeoutMs * 2 + 30_000

      /**
       * Embeds `posts` (each with its input text, computed once) in one call
       * and stores the vectors, or records the failure. A batch the API
       * rejects (one text it cannot take) is split in halves until that post
       * is alone, so it does not hold back the others. Yields whether the API
       * was answering.
       */
      const embedBatch = (
        posts: ReadonlyArray<{ readonly post: ClaimedPost; readonly input: string }>,
        token: string
      ): Effect.Effect<boolean, SqlError.SqlError> =>
        embeddings.embed(posts.map(({ input }) => input), config.embeddingsBackfillTimeoutMs).pipe(
          Effect.matchEffect({
            onSuccess: (vectors) =>
              repo.store(model, token, posts.map(({ post }, i) => ({ post, vector: vectors[i]! }))).pipe(
                Effect.tap((stored) => stored > 0 ? signal.vectorsStored : Effect.void),
                Effect.as(true)
              ),
            onFailure: (error) => {
              if (error.rejected === true && posts.length > 1) {
                const half = Math.ceil(posts.length / 2)
                return Effect.zipWith(embedBatch(posts.slice(0, half), token), embedBatch(posts.slice(half), token), (a, b) => a && b)
              }
              return Clock.currentTimeMillis.pipe(
                Effect.flatMap((nowMs) =>
                  repo.fail({
                    model,
                    nowMs,
                    token,
                    postIds: posts.map(({ post }) => post.postId),
                    error: error.reason,
                    baseMs: config.embeddingsRetryBaseMs,
                    maxMs: maxRetryMs
                  })
                ),
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
          return { claimed: posts.length, ok: yield* embedBatch(withInputs, token) }
        }).pipe(
          // Stopped mid-round (a shutdown): whatever it leased is free for the next worker at once.
          Effect.onInterrupt(() => Effect.ignore(repo.release(model, token)))
        )
      }, Effect.orDie)

      return EmbeddingRound.of({ model, run })
    })
  )
}

/**
 * The loop: new posts as soon as they are committed, and a sweep for
 * anything else that is due (the back-fill at start-up, imported or changed
 * posts, retries), repeated until it finds nothing, then every
 * `min(10 s, EMBEDDINGS_RETRY_BASE_MS)`. After a failed call the loop itself
 * waits, doubling up to `maxLoopBackoffMs`, so that an API that is down is
 * not hammered.
 */
const loop = Effect.gen(function*() {
  const config = yield* ServerConfig
  const round = yield* EmbeddingRound
  const signal = yield* EmbeddingSignal
  const sweepMs = Math.min(maxSweepMs, config.embeddingsRetryBaseMs)
  let failures = 0
  let nextSweep = 0
  // A round that fails outright (the database is away) counts as a failed call: the loop waits, then goes on.
  const attempt = (created?: ReadonlyArray<CreatedPost>) =>
    round.run(created?.map((post) => post.postId), created?.flatMap((post) => post.span === undefined ? [] : [post.span])).pipe(
      Effect.catchCause((cause) =>
        Cause.hasInterruptsOnly(cause)
          ? Effect.interrupt
          : Effect.logWarning("Embedding round failed; trying again", cause).pipe(Effect.as({ claimed: 0, ok: false }))
      )
    )
  const settle = (result: StepResult) => {
    if (result.ok) {
      failures = 0
      return Effect.void
    }
    failures += 1
    return Effect.sleep(Math.min(config.embeddingsRetryBaseMs * 2 ** (failures - 1), maxLoopBackoffMs))
  }
  const embedCreated = (created: ReadonlyArray<CreatedPost>) =>
    Effect.gen(function*() {
      for (let i = 0; i < created.length; i += batchSize) yield* settle(yield* attempt(created.slice(i, i + batchSize)))
    })
  for (;;) {
    const now = yield* Clock.currentTimeMillis
    if (now >= nextSweep) {
      // New posts go first, even in the middle of a long back-fill.
      yield* embedCreated(yield* signal.poll)
      const result = yield* attempt()
      yield* settle(result)
      if (result.ok && result.claimed > 0) continue
      nextSweep = (yield* Clock.currentTimeMillis) + sweepMs
      continue
    }
    yield* embedCreated(yield* Effect.raceFirst(signal.created, Effect.sleep(nextSweep - now).pipe(Effect.as([]))))
  }
})

/**
 * Background embedding (decision 0009), a layer that starts only when
 * `EMBEDDINGS_URL` is set. It first makes sure the model's HNSW index exists.
 * Several instances may run it on one database: leases keep two from
 * embedding the same post at once.
 */
export class Embedder {
  static readonly layerAlways = Layer.effectDiscard(Effect.gen(function*() {
    const config = yield* ServerConfig
    const round = yield* EmbeddingRound
    const repo = yield* EmbeddingRepo
    const prepare = repo.ensureIndex(round.model, { concurrently: Option.isSome(config.databaseUrl) }).pipe(
      Effect.tap((indexed) =>
        indexed ? Effect.void : Effect.logWarning(
          `No vector index for ${round.model.dimensions} dimensions (HNSW indexes up to 4,000): suggestions compare every post of a board`
        )
      ),
      Effect.catchCause((cause) => Effect.logWarning("Could not create the embeddings index; suggestions still work, more slowly", cause))
    )
    yield* Effect.forkScoped(
      prepare.pipe(
        Effect.andThen(loop),
        Effect.catchCause((cause) =>
          Cause.hasInterruptsOnly(cause) ? Effect.interrupt : Effect.logError("Embedding worker stopped", cause)
        )
      )
    )
    yield* Effect.logDebug(`Embedding worker started for ${round.model.name} (${round.model.dimensions} dimensions)`)
  })).pipe(Layer.provide(EmbeddingRound.layer))

  /** Runs when `EMBEDDINGS_URL` is set. */
  static readonly layer = Layer.unwrap(Effect.gen(function*() {
    const config = yield* ServerConfig
    return Option.isSome(config.embeddings) ? Embedder.layerAlways : Layer.empty
  }))
}
