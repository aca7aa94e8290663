import { Cache, Cause, Context, Effect, Exit, Layer, Option } from "effect"
import type { SqlError } from "effect/sql"
import { EmbeddingRepo, type NearPost } from "../embeddings/EmbeddingRepo.js"
import { embeddingInput, Embeddings, type EmbeddingsError } from "../embeddings/Embeddings.js"
import { type Background, exactSearchUpTo, pValue } from "./calibration.js"
import { CalibrationRepo } from "./CalibrationRepo.js"
import { SuggestionQueries } from "./SuggestionQueries.js"

/** Draft embeddings are kept this long: a visitor who types the same words again costs no call. */
export const draftCacheTtl = "5 minutes"
/** What the cached draft vectors may take, in bytes: the entry count follows from the vector size. */
export const draftCacheBytes = 8 * 1024 * 1024

/** How long a board's background is kept in process (decision 0023), and for how many boards at most. */
export const backgroundTtl = "5 seconds"
const backgroundCacheSize = 10_000

/** The same words with other spacing are the same draft. */
export const normalizeDraft = (text: string) => text.normalize("NFC").replace(/\s+/gu, " ").trim()

export interface DraftQuery {
  readonly organizationId: string
  readonly boardId: string
  readonly title: string
  /** The draft's content as plain text. */
  readonly text: string
  readonly limit: number
}

/** A near post, and how it stands out on its board (`calibration.ts`). */
export interface NearMatch extends NearPost {
  readonly p: number
}

/**
 * The semantic half of suggestions (README: "Embeddings: suggestions by
 * meaning"): embed the draft, then the nearest public posts of the board, each
 * with the p-value of its distance on the board's background (decision 0023).
 * Which of them are shown is `blend.ts`'s to say.
 */
export class Semantic extends Context.Service<Semantic, {
  /**
   * The matches, closest first; `None` when there is no answer to give:
   * embeddings not configured, or the API failed or timed out (logged).
   */
  readonly nearest: (query: DraftQuery) => Effect.Effect<Option.Option<ReadonlyArray<NearMatch>>>
}>()("hearken/Semantic") {
  /** Needs the `EmbeddingRepo` and the `CalibrationRepo`. */
  static readonly layerNoDeps = Layer.effect(
    Semantic,
    Effect.gen(function*() {
      const embeddings = yield* Embeddings
      const repo = yield* EmbeddingRepo
      const calibrations = yield* CalibrationRepo
      const queries = yield* SuggestionQueries
      if (Option.isNone(embeddings.model)) return Semantic.of({ nearest: () => Effect.succeedNone })
      const model = embeddings.model.value
      // Float32 (pgvector stores single precision anyway): 4 bytes a dimension, plus the key.
      const drafts = yield* Cache.makeWith(
        (input: string) => embeddings.embed([input]).pipe(Effect.map(([vector]) => Float32Array.from(vector!))), {
        capacity: Math.max(16, Math.floor(draftCacheBytes / (model.dimensions * 4 + 4 * 1024))),
        // A failure is not remembered: the next keystroke tries again.
        timeToLive: (exit: Exit.Exit<Float32Array, EmbeddingsError>) => Exit.isSuccess(exit) ? draftCacheTtl : 0
      })
      // A board's background changes only when the calibrator measures it again: read once per `backgroundTtl`, not per keystroke.
      const backgrounds = yield* Cache.makeWith((boardId: string) => queries.run(calibrations.background(model, boardId)), {
        capacity: backgroundCacheSize,
        timeToLive: (exit: Exit.Exit<Background, SqlError.SqlError>) => Exit.isSuccess(exit) ? backgroundTtl : 0
      })

      const nearest = Effect.fn("Semantic.nearest")(function*(query: DraftQuery) {
        // The key is the text sent: a visitor's extra spaces change neither.
        const vector = yield* Cache.get(drafts, embeddingInput(normalizeDraft(query.title), normalizeDraft(query.text)))
        // The vector query shares the suggestions' connections; the draft's embedding call above holds none.
        const background = yield* Cache.get(backgrounds, query.boardId)
        const near = yield* queries.run(repo.nearest(model, {
          organizationId: query.organizationId,
          boardId: query.boardId,
          vector: Array.from(vector),
          limit: query.limit,
          // A board not measured yet is searched through the index: it may be a large import.
          exact: background.posts > 0 && background.posts <= exactSearchUpTo
        }))
        return Option.some(near.map((post) => ({ ...post, p: pValue(background, post.distance) })))
      }, (effect) =>
        effect.pipe(
          // The API's failures are logged where they happen; either way the lexical answer stands.
          Effect.catchTag("EmbeddingsError", () => Effect.succeedNone),
          Effect.catchCause((cause) =>
            Cause.hasInterruptsOnly(cause)
              ? Effect.interrupt
              : Effect.logWarning("Semantic suggestions failed; answering lexically", cause).pipe(Effect.as(Option.none()))
          )
        ))

      return Semantic.of({ nearest })
    })
  )

  static readonly layer = this.layerNoDeps.pipe(Layer.provide([EmbeddingRepo.layer, CalibrationRepo.layer]))
}
