import { Cause, Context, Data, Effect, Exit, Layer, Option, Redacted, Schema } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest, HttpClientResponse } from "effect/http"
import { ServerConfig } from "../config.js"
import * as Metrics from "../observability/Metrics.js"

/**
 * An embeddings call that gave no usable vectors. `reason` never holds the key.
 * `rejected`: the API refused the input itself (a 4xx other than 408 and 429,
 * such as a text over the model's context): another call with the same input
 * fails again, while a smaller batch may not.
 */
export class EmbeddingsError extends Data.TaggedError("EmbeddingsError")<{
  readonly reason: string
  readonly rejected?: boolean | undefined
  readonly timedOut?: boolean | undefined
}> {
  override get message() {
    return this.reason
  }
}

/** The configured model: rows and indexes are tagged with both. */
export interface Model {
  readonly name: string
  readonly dimensions: number
}

/** A vector of the configured size. */
export type Vector = ReadonlyArray<number>

/**
 * The text a post or a draft is embedded as (README: "Embeddings: suggestions
 * by meaning"): the title, a blank line, then the plain-text content, cut at
 * `maxInputChars` code points so that no model's context is exceeded
 * (512-token models included).
 */
export const maxInputChars = 2_000
export const embeddingInput = (title: string, text: string) => {
  const whole = text.trim() === "" ? title : `${title}\n\n${text}`
  const points = Array.from(whole)
  return points.length <= maxInputChars ? whole : points.slice(0, maxInputChars).join("")
}

const EmbeddingsAnswer = Schema.Struct({
  data: Schema.Array(Schema.Struct({ index: Schema.Number, embedding: Schema.Array(Schema.Number) }))
})

/**
 * Checks an answer against the request: one vector per input, every index
 * exactly once, every vector of the configured size and finite. Yields the
 * vectors in input order.
 */
export const inInputOrder = (answer: typeof EmbeddingsAnswer.Type, inputs: number, dimensions: number) => {
  if (answer.data.length !== inputs) {
    return Effect.fail(new EmbeddingsError({ reason: `expected ${inputs} embeddings, got ${answer.data.length}` }))
  }
  const vectors: Array<Vector | undefined> = new Array(inputs)
  for (const item of answer.data) {
    if (!Number.isInteger(item.index) || item.index < 0 || item.index >= inputs || vectors[item.index] !== undefined) {
      return Effect.fail(new EmbeddingsError({ reason: `the answer's indexes do not match the ${inputs} inputs` }))
    }
    if (item.embedding.length !== dimensions) {
      return Effect.fail(
        new EmbeddingsError({ reason: `a vector has ${item.embedding.length} dimensions, EMBEDDINGS_DIMENSIONS is ${dimensions}` })
      )
    }
    if (!item.embedding.every(Number.isFinite)) return Effect.fail(new EmbeddingsError({ reason: "a vector has a value that is not a finite number" }))
    vectors[item.index] = item.embedding
  }
  return Effect.succeed(vectors as ReadonlyArray<Vector>)
}

/** Why a call failed, in a few words: never the URL's credentials, the key, or the whole body. */
const describe = (error: unknown): EmbeddingsError => {
  if (error instanceof EmbeddingsError) return error
  const e = error as { readonly _tag?: string; readonly reason?: { readonly _tag?: string; readonly response?: { readonly status?: number } } }
  if (e.reason?._tag === "StatusCodeError") {
    const status = e.reason.response?.status ?? 0
    return new EmbeddingsError({ reason: `HTTP ${status}`, rejected: status >= 400 && status < 500 && status !== 408 && status !== 429 })
  }
  if (e.reason?._tag === "DecodeError" || e._tag === "SchemaError") return new EmbeddingsError({ reason: "the answer is not an embeddings list" })
  return new EmbeddingsError({ reason: e.reason?._tag ?? e._tag ?? "unknown error" })
}

/**
 * The embeddings API, OpenAI-compatible: `POST {EMBEDDINGS_URL}/embeddings`
 * with `{ model, input: [...] }` and an optional bearer key. Ollama, vLLM, TEI
 * and OpenAI all speak it. Absent (`model` is `None`) unless `EMBEDDINGS_URL` is set.
 */
export class Embeddings extends Context.Service<Embeddings, {
  readonly model: Option.Option<Model>
  /**
   * One vector per input, in order, within `timeoutMs` (default
   * `EMBEDDINGS_TIMEOUT_MS`) for the whole call. Fails with `EmbeddingsError`
   * (and logs why) on any other outcome.
   */
  readonly embed: (inputs: ReadonlyArray<string>, timeoutMs?: number) => Effect.Effect<ReadonlyArray<Vector>, EmbeddingsError>
}>()("hearken/Embeddings") {
  static readonly layer = Layer.effect(
    Embeddings,
    Effect.gen(function*() {
      const config = yield* ServerConfig
      if (Option.isNone(config.embeddings)) {
        return Embeddings.of({
          model: Option.none(),
          embed: () => Effect.fail(new EmbeddingsError({ reason: "EMBEDDINGS_URL is not set" }))
        })
      }
      const settings = config.embeddings.value
      const model: Model = { name: settings.model, dimensions: settings.dimensions }
      const endpoint = `${settings.url.href.replace(/\/+$/, "")}/embeddings`
      const client = (yield* HttpClient.HttpClient).pipe(
        HttpClient.mapRequest((request) =>
          Option.match(settings.apiKey, {
            onNone: () => request,
            onSome: (key) => HttpClientRequest.bearerToken(request, Redacted.value(key))
          })
        ),
        HttpClient.filterStatusOk
      )
      const embed = Effect.fn("Embeddings.embed")(function*(inputs: ReadonlyArray<string>, timeoutMs = config.embeddingsTimeoutMs) {
        if (inputs.length === 0) return []
        return yield* HttpClientRequest.post(endpoint).pipe(
          HttpClientRequest.acceptJson,
          HttpClientRequest.bodyJsonUnsafe({ model: model.name, input: inputs }),
          client.execute,
          Effect.flatMap(HttpClientResponse.schemaBodyJson(EmbeddingsAnswer)),
          Effect.flatMap((answer) => inInputOrder(answer, inputs.length, model.dimensions)),
          Effect.scoped,
          Effect.timeoutOrElse({
            duration: timeoutMs,
            orElse: () => Effect.fail(new EmbeddingsError({ reason: `no answer within ${timeoutMs} ms`, timedOut: true }))
          }),
          Effect.mapError(describe),
          Metrics.timeEmbeddingsCall((exit) =>
            Exit.isSuccess(exit) ? "ok" : Option.match(Cause.findErrorOption(exit.cause), {
              onNone: () => "error",
              onSome: (error) => error.timedOut === true ? "timeout" : error.rejected === true ? "rejected" : "error"
            })
          ),
          Effect.tapError((error) =>
            Effect.logWarning(`Embeddings API call failed: ${error.reason}`).pipe(
              Effect.annotateLogs({ inputs: inputs.length, model: model.name })
            )
          )
        )
      })

      return Embeddings.of({ model: Option.some(model), embed })
    })
  ).pipe(Layer.provide(FetchHttpClient.layer))
}
