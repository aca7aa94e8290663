import { DataValidationError, InternalServerError, RequestErrors } from "@hearken/api/effect"
import { ByteSize, Cause, Effect, Layer, Result } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiError } from "effect/http-api"
import { describeIssue } from "../edge/SchemaIssues.js"
import * as Tracing from "../observability/Tracing.js"
import { maxBodyBytes, shapeError, tooLarge } from "./BodyLimits.js"

const fromSchemaError = (error: HttpApiError.HttpApiSchemaError) => {
  const where = error.kind === "Query" ? "query" : "body"
  const message = describeIssue(error.cause.issue, where)
  return new DataValidationError({
    message: message === "body: Expected a valid JSON body"
      ? "body: malformed JSON"
      : message.startsWith("body: Expected ")
      ? "body: Expected a JSON object"
      : message
  })
}

/**
 * `application/json`, with no parameter but an optional `charset=utf-8`
 * (case-insensitive, spaces allowed, quoted or not); anything else, `+json`
 * types included, is refused. A missing type is refused too: it is what a
 * cross-site `fetch` of an untyped Blob sends, with no CORS preflight, and
 * `application/json` is the one type a browser never sends cross-site without
 * the preflight that `cors` answers.
 */
const mustBeJson = new DataValidationError({ message: "Content-Type: must be application/json" })
const mustBeUtf8 = new DataValidationError({ message: "Content-Type: charset must be utf-8" })

const contentTypeError = (header: string | undefined): DataValidationError | undefined => {
  if (header === undefined) return mustBeJson
  const [mediaType = "", ...parameters] = header.split(";").map((part) => part.trim())
  if (mediaType.toLowerCase() !== "application/json") return mustBeJson
  for (const parameter of parameters) {
    if (parameter === "") continue
    const equals = parameter.indexOf("=")
    if (equals === -1 || parameter.slice(0, equals).trim().toLowerCase() !== "charset") return mustBeJson
    const value = parameter.slice(equals + 1).trim().replace(/^"(.*)"$/, "$1")
    if (value.toLowerCase() !== "utf-8") return mustBeUtf8
  }
  return undefined
}

/**
 * Compressed bodies are not supported: bodies are small JSON, and a
 * decompression bomb would slip past the size limit, which counts wire bytes.
 */
const contentEncodingError = (contentEncoding: string | undefined): DataValidationError | undefined =>
  contentEncoding === undefined || contentEncoding.trim().toLowerCase() === "identity"
    ? undefined
    : new DataValidationError({ message: "Content-Encoding: must be identity (compressed bodies are not supported)" })

/** Fatal: a byte sequence that is not UTF-8 is refused, never turned into U+FFFD. */
const utf8 = new TextDecoder("utf-8", { fatal: true })
const notUtf8 = new DataValidationError({ message: "body: not valid UTF-8" })
const unreadable = new DataValidationError({ message: "body: could not be read" })

const isMaxBytes = (defect: unknown): boolean => {
  for (let current = defect, depth = 0; current !== null && typeof current === "object" && depth < 8; depth++) {
    if ((current as { _tag?: unknown })._tag === "MaxBytesError") return true
    current = (current as { cause?: unknown }).cause
  }
  return false
}

/** What a 500 says when nothing more specific may be said. */
export const internalMessage = "Internal server error"

/**
 * A 500, logged once with its cause and trace id: the error whose body
 * carries the id as `detail` (when the request is traced) and nothing else
 * of the cause (no stack, SQL or secret). The endpoints' edge (below) and the
 * router's fallback (`Edge.ts`) both answer their 500s with it.
 */
export const internalError = (log: string, cause: Cause.Cause<unknown>, message = internalMessage) =>
  Effect.flatMap(Tracing.currentTraceId, (traceId) =>
    Effect.logError(log, cause).pipe(
      Effect.annotateLogs(traceId === undefined ? {} : { traceId }),
      Effect.as(new InternalServerError({ message, ...(traceId === undefined ? {} : { detail: traceId }) }))
    ))

/** A 500, logged once, failing the request. */
const internal = (message: string, cause: Cause.Cause<unknown>) =>
  Effect.flatMap(
    internalError(
      message === internalMessage ? "Unexpected failure while handling a request" : `Request failed: ${message}`,
      cause,
      message
    ),
    Effect.fail
  )

/**
 * Every endpoint's edge: refuses bodies that are not UTF-8 JSON, compressed,
 * over the size limit or too deep or long to parse cheaply (`BodyLimits.ts`),
 * renders decoding failures as `DataValidationError` naming
 * the field, and turns any unexpected failure into a logged
 * `InternalServerError` that carries no stack, SQL or secret.
 */
export const layer = Layer.succeed(RequestErrors, (httpEffect) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    if (request.method === "POST") {
      const refused = contentTypeError(request.headers["content-type"]) ??
        contentEncodingError(request.headers["content-encoding"])
      if (refused !== undefined) return yield* refused
      const length = Number(request.headers["content-length"])
      if (length > maxBodyBytes) return yield* tooLarge
      // Read (and cached) here so it can be checked as UTF-8: the payload decoder's own decoding replaces bad bytes silently.
      const body = yield* request.arrayBuffer.pipe(
        Effect.mapError((error) => error.reason._tag === "RequestParseError" && error.reason.reason === "BodyTooLarge" ? tooLarge : unreadable)
      )
      if (!isUtf8(body)) return yield* notUtf8
      // Before the payload decoder's `JSON.parse`, whose cost follows what it builds.
      const shapeRefused = shapeError(new Uint8Array(body))
      if (shapeRefused !== undefined) return yield* shapeRefused
    }
    return yield* httpEffect
  }).pipe(
    Effect.provideService(HttpServerRequest.MaxBodySize, ByteSize.bytes(maxBodyBytes)),
    Effect.catchCause((cause) => toEdgeFailure(cause))
  ))

const isUtf8 = (body: ArrayBuffer) => {
  try {
    utf8.decode(body)
    return true
  } catch {
    return false
  }
}

const toEdgeFailure = <E>(cause: Cause.Cause<E>): Effect.Effect<never, E | DataValidationError | InternalServerError> => {
  if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
  const error = Cause.findError(cause)
  if (Result.isSuccess(error)) {
    if (HttpApiError.HttpApiSchemaError.is(error.success)) return Effect.fail(fromSchemaError(error.success))
    // A handler's own 500 (an organization with no statuses) is logged like any other.
    if (error.success instanceof InternalServerError) return internal(error.success.message, cause)
    return Effect.fail(error.success)
  }
  const defect = Cause.findDefect(cause)
  if (Result.isSuccess(defect)) {
    if (HttpApiError.HttpApiSchemaError.is(defect.success)) return Effect.fail(fromSchemaError(defect.success))
    if (isMaxBytes(defect.success)) return Effect.fail(tooLarge)
  }
  return internal(internalMessage, cause)
}
