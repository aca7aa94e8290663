import { DataValidationError, type FeedbackRequest, idempotencyKeyPattern } from "@hearken/api/effect"
import { requestHeaders } from "@hearken/api/thin"
import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { organization } from "../observability/Tracing.js"
import { Feedback } from "./Feedback.js"

/** `Idempotency-Key` (docs/api.md: "Retries: Idempotency-Key"), checked here: the endpoint does not declare it (see `Api.ts`). */
const idempotencyKey = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
  const key = request.headers[requestHeaders.idempotencyKey]
  return key === undefined || idempotencyKeyPattern.test(key)
    ? Effect.succeed(key)
    : Effect.fail(new DataValidationError({ message: "Idempotency-Key: Expected 1 to 255 visible ASCII characters" }))
})

/** `POST /feedback`. Each request's HTTP span names its organization (when spans are exported). */
export const handler = Effect.gen(function*() {
  const feedback = yield* Feedback
  return ({ payload }: { readonly payload: FeedbackRequest }) =>
    organization(payload.organizationId).pipe(Effect.andThen(idempotencyKey), Effect.flatMap((key) => feedback.create(payload, key)))
})
