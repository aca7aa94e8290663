import { HearkenApi } from "@hearken/api"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Boards } from "../boards/Boards.js"
import { Feedback } from "../feedback/Feedback.js"
import { Suggestions } from "../suggestions/Suggestions.js"
import { Updates } from "../updates/Updates.js"

export const layer = HttpApiBuilder.group(
  HearkenApi,
  "widget",
  Effect.fn(function*(handlers) {
    const boards = yield* Boards
    const updates = yield* Updates
    const feedback = yield* Feedback
    const suggestions = yield* Suggestions
    return handlers.handleAll({
      boards: ({ query }) => boards.listPublic(query.organizationId),
      updates: ({ query }) => updates.listPublished(query.organizationId),
      feedback: ({ payload }) => feedback.create(payload),
      suggestions: ({ payload }) => suggestions.suggest(payload)
    })
  })
)
