import { Cause, Context, Effect, Layer, Option } from "effect"
import { SqlError } from "effect/sql"
import { createHash } from "node:crypto"
import * as BoundedCache from "../caching/BoundedCache.js"
import { embeddingInput, Embeddings } from "../embeddings/Embeddings.js"
import type { Model } from "../embeddings/Vectors.js"
import { type Background, exactSearchUpTo, pValue } from "./calibration.js"
import { CalibrationRepo } from "./CalibrationRepo.js"
import { isTimeout, SuggestionQueries } from "./SuggestionQueries.js"
import { type NearPost, VectorSearch } from "./VectorSearch.js"

/** Draft embeddings are kept this long: a visitor who types the same words again costs no call. */
export const draftCacheTtl = "5 minutes"
/** What the cached draft vectors may take, in bytes, keys included (decision 0025). */
export const draftCacheBytes = 8 * 1024 * 1024
const draftCacheEntries = 10_000

/** How long a board's background is kept in process (decision 0023), and for how many boards and bytes at most (decision 0025). */
export const backgroundTtl = "5 seconds"
const backgroundCacheEntries = 10_000
const backgroundCacheBytes = 16 * 1024 * 1024

/**
 * A draft's key: its organization, the model and the text sent, digested. One
 * organization's visitors cannot tell by the time of an answer what another
 * organization's visitor typed, and the cache keeps no visitor's words.
 */
export const draftKey = (organizationId: string, model: Model, input: string) =>
  createHash("sha256").update(`${organizationId}\u0000${model.name}\u0000${model.dimensions}\u0000${input}`).digest("base64url")

/** The same words with other spacing are the same draft. */
export const normalizeDraft = (text: string) => text.normalize("NFC").replace(/\s+/gu, " ").trim()

/** A draft for a public board of the organization with public posts: the caller checks the board first, so another costs no embeddings call. */
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
 * The semantic half of suggestions (docs/api.md: "Suggestions by meaning:
 * meaning"): embed the draft, then the nearest public posts of the board, each
 * with the p-value of its distance on the board's background (decision 0023).
 * Which of them are shown is `blend.ts`'s to say.
 */
export class Semantic extends Context.Service<Semantic, {
  /**
   * The matches, closest first; `None` when there is no answer to give:
   * embeddings not configured, or the API failed or timed out (logged), or
   * a statement ran past the suggestions' statement timeout (counted).
   */
  readonly nearest: (query: DraftQuery) => Effect.Effect<Option.Option<ReadonlyArray<NearMatch>>>
}>()("hearken/Semantic") {
  /** Needs the `VectorSearch` and the `CalibrationRepo`. */
  static readonly layerNoDeps = Layer.effect(
    Semantic,
    Effect.gen(function*() {
      const embeddings = yield* Embeddings
      const vectors = yield* VectorSearch
      const calibrations = yield* CalibrationRepo
      const queries = yield* SuggestionQueries
      if (Option.isNone(embeddings.model)) return Semantic.of({ nearest: () => Effect.succeedNone })
      const model = embeddings.model.value
      // Float32 (pgvector stores single precision anyway): 4 bytes a dimension. A failure is not kept: the next keystroke tries again.
      const drafts = yield* BoundedCache.make<Float32Array>({
        maxEntries: draftCacheEntries,
        maxBytes: draftCacheBytes,
        timeToLive: draftCacheTtl,
        sizeOf: (vector) => vector.byteLength
      })
      // A board's background changes only when the calibrator measures it again: read once per `backgroundTtl`, not per keystroke.
      const backgrounds = yield* BoundedCache.make<Background>({
        maxEntries: backgroundCacheEntries,
        maxBytes: backgroundCacheBytes,
        timeToLive: backgroundTtl,
        sizeOf: (background) => 8 * (background.board.length + background.pool.length)
      })

      const nearest = Effect.fn("Semantic.nearest")(function*(query: DraftQuery) {
        // The text sent, with a visitor's extra spaces changing neither.
        const input = embeddingInput(normalizeDraft(query.title), normalizeDraft(query.text))
        const vector = yield* drafts.getOrLoad(
          draftKey(query.organizationId, model, input),
          embeddings.embed([input]).pipe(Effect.map(([vector]) => Float32Array.from(vector!)))
        )
        // The vector query shares the suggestions' connections; the draft's embedding call above holds none.
        const background = yield* backgrounds.getOrLoad(query.boardId, queries.run(calibrations.background(model, query.boardId)))
        const near = yield* queries.run(vectors.nearest(model, {
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
          // A statement past the suggestions' timeout was cancelled with its own transaction: counted, logged once a minute (decision 0039).
          Effect.catchIf((error) => SqlError.isSqlError(error) && isTimeout(error), () => Effect.as(queries.gaveWay("lexical"), Option.none())),
          Effect.catchCause((cause) =>
            Cause.hasInterruptsOnly(cause)
              ? Effect.interrupt
              : Effect.logWarning("Semantic suggestions failed; answering lexically", cause).pipe(Effect.as(Option.none()))
          )
        ))

      return Semantic.of({ nearest })
    })
  )

  static readonly layer = this.layerNoDeps.pipe(Layer.provide([VectorSearch.layer, CalibrationRepo.layer]))
}
