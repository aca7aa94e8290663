import { Config, Context, Option, type Redacted, Schema } from "effect"
import { Decimal, Integer, Milliseconds, ServiceUrl, Token } from "./schemas.js"

// The embeddings API (`embeddings/`) and how far a meaning may be from a draft's to be suggested (`suggestions/`).

/** The embeddings API, on only when `EMBEDDINGS_URL` is set. */
export const embeddings = Config.all({
  url: Config.option(Config.schema(
    ServiceUrl("give the key as EMBEDDINGS_API_KEY", "the API's base, e.g. https://api.openai.com/v1"),
    "EMBEDDINGS_URL"
  )),
  model: Config.schema(Token("a model name without spaces or control characters"), "EMBEDDINGS_MODEL").pipe(
    Config.withDefault("text-embedding-3-small")
  ),
  dimensions: Config.schema(Integer(1, 16000, "an integer between 1 and 16000"), "EMBEDDINGS_DIMENSIONS").pipe(Config.withDefault(1536)),
  apiKey: Config.option(Config.schema(
    Schema.RedactedFromValue(Token("the key alone, without \"Bearer\", spaces or control characters")),
    "EMBEDDINGS_API_KEY"
  ))
}).pipe(Config.map(({ url, ...embeddings }) => Option.map(url, (url) => ({ url, ...embeddings }))))

/** Limit on one whole call for a draft: a draft whose call takes longer gets the lexical answer. */
export const embeddingsTimeoutMs = Config.schema(Milliseconds(600_000), "EMBEDDINGS_TIMEOUT_MS").pipe(Config.withDefault(1500))

/** Limit on one background call (up to 32 posts): a model on a CPU needs far longer than for one draft. */
export const embeddingsBackfillTimeoutMs = Config.schema(Milliseconds(3_600_000), "EMBEDDINGS_BACKFILL_TIMEOUT_MS").pipe(
  Config.withDefault(120_000)
)

/** A post whose embedding failed n times is tried again `base × 2^(n−1)` later, at most an hour. */
export const embeddingsRetryBaseMs = Config.schema(Milliseconds(3_600_000), "EMBEDDINGS_RETRY_BASE_MS").pipe(Config.withDefault(10_000))

export const suggestionsMaxDistance = Config.schema(Decimal(0, 2, "a number between 0 and 2"), "SUGGESTIONS_MAX_DISTANCE").pipe(
  Config.withDefault(1)
)

/** The API: where, which model, how many dimensions, and the key. */
export interface EmbeddingsApi {
  readonly url: URL
  readonly model: string
  readonly dimensions: number
  readonly apiKey: Option.Option<Redacted.Redacted<string>>
}

/** The embedding settings: `embeddings/`, the suggestions' semantic half and calibrator, the gauges. */
export interface EmbeddingsConfigShape {
  /** None without `EMBEDDINGS_URL`: suggestions are lexical only. */
  readonly embeddings: Option.Option<EmbeddingsApi>
  readonly embeddingsTimeoutMs: number
  readonly embeddingsBackfillTimeoutMs: number
  readonly embeddingsRetryBaseMs: number
  readonly suggestionsMaxDistance: number
}

export class EmbeddingsConfig extends Context.Service<EmbeddingsConfig, EmbeddingsConfigShape>()("hearken/EmbeddingsConfig") {}
