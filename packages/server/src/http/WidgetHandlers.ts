import { HearkenApi } from "@hearken/api"
import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { PublicAnswers } from "../caching/PublicAnswers.js"
import { Feedback } from "../feedback/Feedback.js"
import { Suggestions } from "../suggestions/Suggestions.js"

const ifNoneMatch = Effect.map(HttpServerRequest.HttpServerRequest, (request) => request.headers["if-none-match"])

export const layer = HttpApiBuilder.group(
  HearkenApi,
  "widget",
  Effect.fn(function*(handlers) {
    const answers = yield* PublicAnswers
    const feedback = yield* Feedback
    const suggestions = yield* Suggestions
    return handlers.handleAll({
      boards: ({ query }) => Effect.flatMap(ifNoneMatch, (tag) => answers.boards(query.organizationId, tag)),
      updates: ({ query }) => Effect.flatMap(ifNoneMatch, (tag) => answers.updates(query.organizationId, tag)),
      feedback: ({ payload }) => feedback.create(payload),
      suggestions: ({ payload }) => suggestions.suggest(payload)
    })
  })
)
