import { Cause, Context, Data, Effect, Exit, Layer, Option, Redacted, Result, Schema } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { EmbeddingsConfig } from "../config/embeddings.js"
import * as Metrics from "../observability/Metrics.js"
import { BodyTooLarge, readBounded } from "../outbound/BoundedBody.js"
import { indexKind } from "./EmbeddingRepo.js"

/**
 * An embeddings call that gave no usable vectors. `reason` never holds the key.
 * `rejected`: the API refused the input itself (a 4xx other than 408 and 429,
 * such as a text over the model's context): another call with the same input
 * fails again, while a smaller batch may not. `tooLarge`: the answer went past
 * `maxAnswerBytes` and was dropped unread.
 */
export class EmbeddingsError extends Data.TaggedError("EmbeddingsError")<{
  readonly reason: string
  readonly rejected?: boolean | undefined
  readonly timedOut?: boolean | undefined
  readonly tooLarge?: boolean | undefined
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
 * The text a post or a draft is embedded as (docs/api.md: "Suggestions by
 * meaning: embeddings"): the title, a blank line, then the plain-text content, cut at
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
  // Each vector is checked on its own (`vectorProblem`): one unusable vector fails its input, not the answer.
  data: Schema.Array(Schema.Struct({ index: Schema.Number, embedding: Schema.Unknown }))
})
type EmbeddingsAnswer = typeof EmbeddingsAnswer.Type

/**
 * The most bytes an answer for `inputs` texts of `dimensions` may take
 * (decision 0028): 64 bytes a number (a JSON float is at most 24 characters,
 * the rest leaves room for pretty-printing), 1 KiB an input for its object's
 * other fields, 64 KiB for the rest of the answer (usage, model). Counted after
 * decompression. 1,536 dimensions: 160 KiB for a draft, 3.2 MiB for a batch of 32.
 */
export const maxAnswerBytes = (inputs: number, dimensions: number) => 64 * 1024 + inputs * (1024 + dimensions * 64)

/** The largest magnitude `halfvec` stores: larger values do not round to 65504 but fail the statement. */
const halfvecLimit = 65_520

/**
 * Why one vector of an answer cannot be stored, or `undefined`: it must be a
 * list of `dimensions` numbers that pgvector takes. Its `vector` is single
 * precision, so a value JavaScript finds finite (1e39) can still overflow it;
 * a model indexed as `halfvec` (EmbeddingRepo's `indexKind`) goes through half
 * precision when the row is written, so its values must fit that too.
 */
export const vectorProblem = (embedding: unknown, dimensions: number): string | undefined => {
  if (!Array.isArray(embedding)) return "a vector is not a list of numbers"
  if (embedding.length !== dimensions) return `a vector has ${embedding.length} dimensions, EMBEDDINGS_DIMENSIONS is ${dimensions}`
  const half = indexKind(dimensions) === "halfvec"
  for (const value of embedding as ReadonlyArray<unknown>) {
    if (typeof value !== "number") return "a vector is not a list of numbers"
    if (!Number.isFinite(value)) return "a vector has a value that is not a finite number"
    if (!Number.isFinite(Math.fround(value))) return "a vector has a value beyond single precision (over 3.4e38)"
    if (half && Math.abs(value) >= halfvecLimit) return `a vector has a value beyond half precision (over 65504), which the index of ${dimensions} dimensions stores`
  }
  return undefined
}

/**
 * Checks an answer against the request: one item per input, every index
 * exactly once (or the whole answer is refused: which vector is whose is
 * unknown). Yields, in input order, each input's vector or why it cannot be
 * used (`vectorProblem`).
 */
export const eachInInputOrder = (
  answer: EmbeddingsAnswer,
  inputs: number,
  dimensions: number
): Effect.Effect<ReadonlyArray<Result.Result<Vector, string>>, EmbeddingsError> => {
  if (answer.data.length !== inputs) {
    return Effect.fail(new EmbeddingsError({ reason: `expected ${inputs} embeddings, got ${answer.data.length}` }))
  }
  const vectors: Array<Result.Result<Vector, string> | undefined> = new Array(inputs)
  for (const item of answer.data) {
    if (!Number.isInteger(item.index) || item.index < 0 || item.index >= inputs || vectors[item.index] !== undefined) {
      return Effect.fail(new EmbeddingsError({ reason: `the answer's indexes do not match the ${inputs} inputs` }))
    }
    const problem = vectorProblem(item.embedding, dimensions)
    vectors[item.index] = problem === undefined ? Result.succeed(item.embedding as Vector) : Result.fail(problem)
  }
  return Effect.succeed(vectors as ReadonlyArray<Result.Result<Vector, string>>)
}

/** `eachInInputOrder`, with the answer refused as a whole if any vector is unusable. */
export const inInputOrder = (answer: EmbeddingsAnswer, inputs: number, dimensions: number) =>
  Effect.flatMap(eachInInputOrder(answer, inputs, dimensions), (vectors) => {
    const unusable = vectors.find(Result.isFailure)
    return unusable === undefined
      ? Effect.succeed(vectors.map((vector) => Result.getOrThrow(vector)))
      : Effect.fail(new EmbeddingsError({ reason: unusable.failure }))
  })

const notAList = () => new EmbeddingsError({ reason: "the answer is not an embeddings list" })

/** The answer's body as an embeddings list. */
const parseAnswer = (body: Uint8Array) =>
  Effect.try({ try: () => JSON.parse(new TextDecoder().decode(body)) as unknown, catch: notAList }).pipe(
    Effect.flatMap((json) => Schema.decodeUnknownEffect(EmbeddingsAnswer)(json).pipe(Effect.mapError(notAList)))
  )

/** Why a call failed, in a few words: never the URL's credentials, the key, or the whole body. */
const describe = (error: unknown): EmbeddingsError => {
  if (error instanceof EmbeddingsError) return error
  if (error instanceof BodyTooLarge) {
    return new EmbeddingsError({ reason: `the answer is longer than ${error.maxBytes} bytes`, tooLarge: true })
  }
  const e = error as { readonly _tag?: string; readonly reason?: { readonly _tag?: string; readonly response?: { readonly status?: number } } }
  if (e.reason?._tag === "StatusCodeError") {
    const status = e.reason.response?.status ?? 0
    return new EmbeddingsError({ reason: `HTTP ${status}`, rejected: status >= 400 && status < 500 && status !== 408 && status !== 429 })
  }
  if (e.reason?._tag === "DecodeError") return notAList()
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
   * `EMBEDDINGS_TIMEOUT_MS`) for the whole call, the answer's body included.
   * Fails with `EmbeddingsError` (and logs why) on any other outcome, one
   * unusable vector included.
   */
  readonly embed: (inputs: ReadonlyArray<string>, timeoutMs?: number) => Effect.Effect<ReadonlyArray<Vector>, EmbeddingsError>
  /**
   * `embed`, but a vector the answer got wrong fails only its own input: each
   * input's vector, or why it cannot be used (logged).
   */
  readonly embedEach: (
    inputs: ReadonlyArray<string>,
    timeoutMs?: number
  ) => Effect.Effect<ReadonlyArray<Result.Result<Vector, string>>, EmbeddingsError>
}>()("hearken/Embeddings") {
  static readonly layer = Layer.effect(
    Embeddings,
    Effect.gen(function*() {
      const config = yield* EmbeddingsConfig
      if (Option.isNone(config.embeddings)) {
        const unset = () => Effect.fail(new EmbeddingsError({ reason: "EMBEDDINGS_URL is not set" }))
        return Embeddings.of({ model: Option.none(), embed: unset, embedEach: unset })
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
        HttpClient.filterStatusOk,
        // The call's scope aborts the request when it closes: an answer given up on stops arriving at once.
        HttpClient.withScope
      )
      const logFailure = (inputs: number) => (error: EmbeddingsError) =>
        Effect.logWarning(`Embeddings API call failed: ${error.reason}`).pipe(Effect.annotateLogs({ inputs, model: model.name }))

      /**
       * The call, its body read as a stream up to `maxAnswerBytes` (never
       * buffered whole by the client), all within `timeoutMs`; on any failure
       * the stream is cancelled and nothing of the answer is kept.
       */
      const call = <A>(
        inputs: ReadonlyArray<string>,
        timeoutMs: number,
        check: (answer: EmbeddingsAnswer, inputs: number, dimensions: number) => Effect.Effect<A, EmbeddingsError>
      ) =>
        HttpClientRequest.post(endpoint).pipe(
          HttpClientRequest.acceptJson,
          HttpClientRequest.bodyJsonUnsafe({ model: model.name, input: inputs }),
          client.execute,
          Effect.flatMap((response) => readBounded(response, maxAnswerBytes(inputs.length, model.dimensions))),
          Effect.flatMap(parseAnswer),
          Effect.flatMap((answer) => check(answer, inputs.length, model.dimensions)),
          Effect.scoped,
          Effect.timeoutOrElse({
            duration: timeoutMs,
            orElse: () => Effect.fail(new EmbeddingsError({ reason: `no answer within ${timeoutMs} ms`, timedOut: true }))
          }),
          Effect.mapError(describe),
          Metrics.timeEmbeddingsCall((exit) =>
            Exit.isSuccess(exit) ? "ok" : Option.match(Cause.findErrorOption(exit.cause), {
              onNone: () => "error",
              onSome: (error) =>
                error.timedOut === true ? "timeout" : error.rejected === true ? "rejected" : error.tooLarge === true ? "too_large" : "error"
            })
          ),
          Effect.tapError(logFailure(inputs.length))
        )

      const embedEach = Effect.fn("Embeddings.embedEach")(function*(inputs: ReadonlyArray<string>, timeoutMs = config.embeddingsTimeoutMs) {
        if (inputs.length === 0) return []
        const vectors = yield* call(inputs, timeoutMs, eachInInputOrder)
        const unusable = vectors.filter(Result.isFailure)
        if (unusable.length > 0) {
          yield* Effect.logWarning(`Embeddings API gave ${unusable.length} unusable vectors: ${unusable[0]!.failure}`).pipe(
            Effect.annotateLogs({ inputs: inputs.length, model: model.name })
          )
        }
        return vectors
      })

      const embed = Effect.fn("Embeddings.embed")(function*(inputs: ReadonlyArray<string>, timeoutMs = config.embeddingsTimeoutMs) {
        if (inputs.length === 0) return []
        return yield* call(inputs, timeoutMs, inInputOrder)
      })

      return Embeddings.of({ model: Option.some(model), embed, embedEach })
    })
  ).pipe(Layer.provide(FetchHttpClient.layer))
}
