import { Cause, Clock, Effect, Layer, Option } from "effect"
import { ServerConfig } from "../config.js"
import { EmbeddingRepo } from "../embeddings/EmbeddingRepo.js"
import { Embeddings } from "../embeddings/Embeddings.js"
import { EmbeddingSignal, maxSweepMs } from "../embeddings/Embedder.js"
import { poolOf } from "./calibration.js"
import { CalibrationRepo } from "./CalibrationRepo.js"

/** Posts of a board whose nearest neighbour is measured: the background's size. */
export const sampleSize = 200
/** Boards recalibrated per round; a round with this many is followed by another at once. */
const perRound = 20

/**
 * Keeps each board's background for the configured model (decision 0023) up
 * to date, in the background: a layer that runs only when `EMBEDDINGS_URL` is
 * set. Whenever the embedder stored vectors, and at least every
 * `min(10 s, EMBEDDINGS_RETRY_BASE_MS)`, it finds the boards whose public
 * embedded posts changed (new, embedded again, made private, gone), measures
 * each one's nearest-neighbour distances again, then the model's pool. The
 * cost of a board is bounded by `sampleSize`, whatever its size, and a board
 * larger than `exactUpTo` is measured at most once a minute.
 */
export class Calibrator {
  static readonly layerAlways = Layer.effectDiscard(Effect.gen(function*() {
    const config = yield* ServerConfig
    const embeddings = yield* Embeddings
    const embeddingRepo = yield* EmbeddingRepo
    const repo = yield* CalibrationRepo
    const signal = yield* EmbeddingSignal
    if (Option.isNone(embeddings.model)) return yield* Effect.die(new Error("Calibrator needs EMBEDDINGS_URL"))
    const model = embeddings.model.value
    const sweepMs = Math.min(maxSweepMs, config.embeddingsRetryBaseMs)

    /** One round; yields how many boards it recalibrated. */
    const round = Effect.gen(function*() {
      const stale = yield* repo.stale(model, yield* Clock.currentTimeMillis, perRound)
      for (const board of stale) {
        if (board.posts === 0) yield* repo.remove(model, board.boardId)
        else yield* repo.save(model, board, yield* embeddingRepo.neighbourDistances(model, board.boardId, sampleSize), yield* Clock.currentTimeMillis)
      }
      if (stale.length > 0) yield* repo.savePool(model, poolOf(yield* repo.boards(model)), yield* Clock.currentTimeMillis)
      return stale.length
    })

    const loop: Effect.Effect<never> = round.pipe(
      Effect.catchCause((cause) =>
        Cause.hasInterruptsOnly(cause) ? Effect.interrupt : Effect.logWarning("Calibrating suggestions failed; trying again", cause).pipe(Effect.as(0))
      ),
      Effect.flatMap((n) => n === perRound ? Effect.void : Effect.raceFirst(Effect.sleep(sweepMs), signal.stored)),
      Effect.andThen(() => loop)
    )
    yield* Effect.forkScoped(loop)
  })).pipe(Layer.provide(CalibrationRepo.layer))

  /** Runs when `EMBEDDINGS_URL` is set. */
  static readonly layer = Layer.unwrap(Effect.gen(function*() {
    const config = yield* ServerConfig
    return Option.isSome(config.embeddings) ? Calibrator.layerAlways : Layer.empty
  }))
}
