import { DataValidationError, InternalServerError, RequestErrors } from "@hearken/api"
import { ByteSize, Cause, Effect, Layer, Result } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiError } from "effect/http-api"
import { describeIssue } from "../issues.js"

/** Request bodies over this are refused with 400 before or while they are read. */
export const maxBodyBytes = 1024 * 1024

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

const isJson = (contentType: string) => {
  const mediaType = contentType.split(";")[0]!.trim().toLowerCase()
  return mediaType === "application/json" || /^application\/[a-z0-9.+-]+\+json$/.test(mediaType)
}

const isMaxBytes = (defect: unknown): boolean => {
  for (let current = defect, depth = 0; current !== null && typeof current === "object" && depth < 8; depth++) {
    if ((current as { _tag?: unknown })._tag === "MaxBytesError") return true
    current = (current as { cause?: unknown }).cause
  }
  return false
}

const tooLarge = new DataValidationError({ message: `body: larger than ${maxBodyBytes} bytes (1 MiB)` })
const internal = new InternalServerError({ message: "Internal server error" })

/**
 * Every endpoint's edge: refuses bodies that are not JSON or exceed 1 MiB,
 * renders decoding failures as `DataValidationError` naming the field, and
 * turns any unexpected failure into a logged `InternalServerError` that
 * carries no stack, SQL or secret.
 */
export const layer = Layer.succeed(RequestErrors, (httpEffect) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    if (request.method === "POST") {
      const contentType = request.headers["content-type"]
      if (contentType !== undefined && !isJson(contentType)) {
        return yield* new DataValidationError({ message: "Content-Type: must be application/json" })
      }
      const length = Number(request.headers["content-length"])
      if (length > maxBodyBytes) return yield* tooLarge
    }
    return yield* httpEffect
  }).pipe(
    Effect.provideService(HttpServerRequest.MaxBodySize, ByteSize.bytes(maxBodyBytes)),
    Effect.catchCause((cause) => toEdgeFailure(cause))
  ))

const toEdgeFailure = <E>(cause: Cause.Cause<E>): Effect.Effect<never, E | DataValidationError | InternalServerError> => {
  if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
  const error = Cause.findError(cause)
  if (Result.isSuccess(error)) {
    return HttpApiError.HttpApiSchemaError.is(error.success) ? Effect.fail(fromSchemaError(error.success)) : Effect.fail(error.success)
  }
  const defect = Cause.findDefect(cause)
  if (Result.isSuccess(defect)) {
    if (HttpApiError.HttpApiSchemaError.is(defect.success)) return Effect.fail(fromSchemaError(defect.success))
    if (isMaxBytes(defect.success)) return Effect.fail(tooLarge)
  }
  return Effect.logError("Unexpected failure while handling a request", cause).pipe(Effect.andThen(Effect.fail(internal)))
}
