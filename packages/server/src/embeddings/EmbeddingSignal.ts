import { Context, Effect, Layer, Option, Queue, type Tracer } from "effect"
import { EmbeddingsConfig } from "../config/embeddings.js"
import { exportedSpan } from "../observability/Tracing.js"

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
      const config = yield* EmbeddingsConfig
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
