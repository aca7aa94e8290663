import { Cause, Clock, Effect, Layer, Option } from "effect"
import { EmbeddingsConfig } from "../config/embeddings.js"
import { EmbeddingRepo, exactUpTo } from "../embeddings/EmbeddingRepo.js"
import { Embeddings } from "../embeddings/Embeddings.js"
import { maxSweepMs } from "../embeddings/Embedder.js"
import { EmbeddingSignal } from "../embeddings/EmbeddingSignal.js"
import { poolOf } from "./calibration.js"
import { CalibrationRepo } from "./CalibrationRepo.js"

/** Posts of a board whose nearest neighbour is measured: the background's size. */
export const sampleSize = 200
/** Boards recalibrated per round; a round with this many is followed by another at once. */
const perRound = 20
/**
 * With no vectors stored, a round runs this often: it finds what no signal
 * tells of here (posts made private or deleted, another instance's imports).
 * Finding changed boards reads every embedded post's row (about a second at
 * 100k posts), so it is not done every few seconds.
 */
export const idleRoundMs = 5 * 60_000
/** A board larger than `exactUpTo` is measured at most this often, however often it changes. */
export const largeBoardRefreshMs = 60_000

/**
 * Keeps each board's background for the configured model (decision 0023) up
 * to date, in the background: a layer that runs only when `EMBEDDINGS_URL` is
 * set. `min(10 s, EMBEDDINGS_RETRY_BASE_MS)` after the embedder stored
 * vectors (at most that often), and otherwise every `idleRoundMs` (sooner
 * when a large board it left for later is due), it finds the boards whose
 * public embedded posts changed (new, embedded again, made private, gone),
 * measures each one's nearest-neighbour distances again, then the pool of
 * each organization they belong to (decision 0027). The cost of a board is
 * bounded by `sampleSize`, whatever its size, and a board larger than
 * `exactUpTo` is measured at most once a minute.
 * Needs the `CalibrationRepo`, which `App.ts` provides.
 */
export const layerAlways = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* EmbeddingsConfig
  const embeddings = yield* Embeddings
  const embeddingRepo = yield* EmbeddingRepo
  const repo = yield* CalibrationRepo
  const signal = yield* EmbeddingSignal
  if (Option.isNone(embeddings.model)) return yield* Effect.die(new Error("Calibrator needs EMBEDDINGS_URL"))
  const model = embeddings.model.value
  const sweepMs = Math.min(maxSweepMs, config.embeddingsRetryBaseMs)

  /**
   * One round. Yields how long to wait before the next: none when it
   * measured as many boards as a round may (more may be waiting); until a
   * large board it left for later is due; else `idleRoundMs`.
   */
  const round = Effect.gen(function*() {
    const stale = yield* repo.stale(model, perRound)
    let nextMs = idleRoundMs
    let measured = 0
    // The organizations whose boards changed: only theirs are pooled again, each from its own boards alone.
    const organizations = new Set<string>()
    for (const board of stale) {
      const now = yield* Clock.currentTimeMillis
      if (board.posts === 0) {
        yield* repo.remove(model, board.boardId)
        measured++
        organizations.add(board.organizationId)
      } else if (board.posts > exactUpTo && board.computedMs !== null && now - board.computedMs < largeBoardRefreshMs) {
        nextMs = Math.min(nextMs, board.computedMs + largeBoardRefreshMs - now)
      } else {
        yield* repo.save(model, board, yield* embeddingRepo.neighbourDistances(model, board.boardId, sampleSize), yield* Clock.currentTimeMillis)
        measured++
        organizations.add(board.organizationId)
      }
    }
    for (const organizationId of organizations) {
      yield* repo.savePool(model, organizationId, poolOf(yield* repo.boards(model, organizationId)), yield* Clock.currentTimeMillis)
    }
    return measured === perRound ? 0 : nextMs
  })

  const loop: Effect.Effect<never> = round.pipe(
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.interrupt
        : Effect.logWarning("Calibrating suggestions failed; trying again", cause).pipe(Effect.as(sweepMs))
    ),
    Effect.flatMap((waitMs) => Effect.raceFirst(Effect.sleep(waitMs), signal.stored).pipe(Effect.andThen(Effect.sleep(sweepMs)))),
    Effect.andThen(() => loop)
  )
  yield* Effect.forkScoped(loop)
}))

/** Runs when `EMBEDDINGS_URL` is set. */
export const layer = Layer.unwrap(Effect.gen(function*() {
  const config = yield* EmbeddingsConfig
  return Option.isSome(config.embeddings) ? layerAlways : Layer.empty
}))
