import { HearkenApi } from "@hearken/api/effect"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import * as BoardsHandler from "../boards/BoardsHandler.js"
import * as FeedbackHandler from "../feedback/FeedbackHandler.js"
import * as SuggestionsHandler from "../suggestions/SuggestionsHandler.js"
import * as UpdatesHandler from "../updates/UpdatesHandler.js"

/** The API's `widget` group: each endpoint's handler, from its feature's folder. */
export const layer = HttpApiBuilder.group(
  HearkenApi,
  "widget",
  Effect.fn(function*(handlers) {
    return handlers.handleAll({
      boards: yield* BoardsHandler.handler,
      updates: yield* UpdatesHandler.handler,
      feedback: yield* FeedbackHandler.handler,
      suggestions: yield* SuggestionsHandler.handler
    })
  })
)
