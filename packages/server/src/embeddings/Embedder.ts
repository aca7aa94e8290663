import { Cause, Clock, Effect, Layer, Option } from "effect"
import { DatabaseConfig } from "../config/database.js"
import { EmbeddingsConfig } from "../config/embeddings.js"
import { EmbeddingRepo } from "./EmbeddingRepo.js"
import { batchSize, EmbeddingRound, type StepResult } from "./EmbeddingRound.js"
import { type CreatedPost, EmbeddingSignal } from "./EmbeddingSignal.js"

/** The back-fill looks for posts that are due (imported, changed, failed earlier) at least this often. */
export const maxSweepMs = 10_000
/** The loop waits at most this long after a failed call: new posts are tried again soon after the API is back. */
export const maxLoopBackoffMs = 60_000

/**
 * The loop: new posts as soon as they are committed, and a sweep for
 * anything else that is due (the back-fill at start-up, imported or changed
 * posts, retries), repeated until it finds nothing, then every
 * `min(10 s, EMBEDDINGS_RETRY_BASE_MS)`. After a failed call the loop itself
 * waits, doubling up to `maxLoopBackoffMs`, so that an API that is down is
 * not hammered.
 */
const loop = Effect.gen(function*() {
  const config = yield* EmbeddingsConfig
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
export const layerAlways = Layer.effectDiscard(Effect.gen(function*() {
  const database = yield* DatabaseConfig
  const round = yield* EmbeddingRound
  const repo = yield* EmbeddingRepo
  const prepare = repo.ensureIndex(round.model, { concurrently: Option.isSome(database.databaseUrl) }).pipe(
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
})).pipe(Layer.provide(EmbeddingRound.layerNoDeps))

/** Runs when `EMBEDDINGS_URL` is set. */
export const layer = Layer.unwrap(Effect.gen(function*() {
  const config = yield* EmbeddingsConfig
  return Option.isSome(config.embeddings) ? layerAlways : Layer.empty
}))
