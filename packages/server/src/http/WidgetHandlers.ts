import { DataValidationError, HearkenApi, idempotencyKeyPattern } from "@hearken/api/effect"
import { requestHeaders } from "@hearken/api/thin"
import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { PublicAnswers } from "../caching/PublicAnswers.js"
import { Feedback } from "../feedback/Feedback.js"
import { organization } from "../observability/Tracing.js"
import { Suggestions } from "../suggestions/Suggestions.js"

const ifNoneMatch = Effect.map(HttpServerRequest.HttpServerRequest, (request) => request.headers[requestHeaders.ifNoneMatch])

/** `Idempotency-Key` (docs/api.md: "Retries: Idempotency-Key"), checked here: the endpoint does not declare it (see `Api.ts`). */
const idempotencyKey = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
  const key = request.headers[requestHeaders.idempotencyKey]
  return key === undefined || idempotencyKeyPattern.test(key)
    ? Effect.succeed(key)
    : Effect.fail(new DataValidationError({ message: "Idempotency-Key: Expected 1 to 255 visible ASCII characters" }))
})

export const layer = HttpApiBuilder.group(
  HearkenApi,
  "widget",
  Effect.fn(function*(handlers) {
    const answers = yield* PublicAnswers
    const feedback = yield* Feedback
    const suggestions = yield* Suggestions
    // Each request's HTTP span names its organization (when spans are exported).
    return handlers.handleAll({
      boards: ({ query }) =>
        organization(query.organizationId).pipe(Effect.andThen(ifNoneMatch), Effect.flatMap((tag) => answers.boards(query.organizationId, tag))),
      updates: ({ query }) =>
        organization(query.organizationId).pipe(Effect.andThen(ifNoneMatch), Effect.flatMap((tag) => answers.updates(query.organizationId, tag))),
      feedback: ({ payload }) =>
        organization(payload.organizationId).pipe(Effect.andThen(idempotencyKey), Effect.flatMap((key) => feedback.create(payload, key))),
      suggestions: ({ payload }) => organization(payload.organizationId).pipe(Effect.andThen(suggestions.suggest(payload)))
    })
  })
)
