import { Cache, Cause, Context, Effect, Exit, Layer, Option } from "effect"
import { EmbeddingRepo, type NearPost } from "../embeddings/EmbeddingRepo.js"
import { embeddingInput, Embeddings, type EmbeddingsError } from "../embeddings/Embeddings.js"
import { exactSearchUpTo, pValue } from "./calibration.js"
import { CalibrationRepo } from "./CalibrationRepo.js"
import { SuggestionQueries } from "./SuggestionQueries.js"

/** Draft embeddings are kept this long: a visitor who types the same words again costs no call. */
export const draftCacheTtl = "5 minutes"
/** What the cached draft vectors may take, in bytes: the entry count follows from the vector size. */
export const draftCacheBytes = 8 * 1024 * 1024

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
 * The semantic half of suggestions (spec §4.1, CONTRACT §9): embed the draft,
 * then the nearest public posts of the board, each with the p-value of its distance on the board's background (decision
 * 0023). Which of them are shown is `blend.ts`'s to say.
 */
export class Semantic extends Context.Service<Semantic, {
  /**
   * The matches, closest first; `None` when there is no answer to give:
   * embeddings not configured, or the API failed or timed out (logged).
   */
  readonly nearest: (query: DraftQuery) => Effect.Effect<Option.Option<ReadonlyArray<NearMatch>>>
}>()("hearken/Semantic") {
  static readonly layer = Layer.effect(
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

      const nearest = Effect.fn("Semantic.nearest")(function*(query: DraftQuery) {
        // The key is the text sent: a visitor's extra spaces change neither.
        const vector = yield* Cache.get(drafts, embeddingInput(normalizeDraft(query.title), normalizeDraft(query.text)))
        // The vector query shares the suggestions' connections; the draft's embedding call above holds none.
        const [background, near] = yield* queries.run(Effect.gen(function*() {
          const background = yield* calibrations.background(model, query.boardId)
          const near = yield* repo.nearest(model, {
            organizationId: query.organizationId,
            boardId: query.boardId,
            vector: Array.from(vector),
            limit: query.limit,
            // A board not measured yet is most likely a new, small one.
            exact: background.posts <= exactSearchUpTo
          })
          return [background, near] as const
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
  ).pipe(Layer.provide([EmbeddingRepo.layer, CalibrationRepo.layer]))
}
