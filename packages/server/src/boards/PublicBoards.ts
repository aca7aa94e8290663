import { Board } from "@hearken/api/effect"
import { Context, Effect, Layer, Schema } from "effect"
import type { HttpServerResponse } from "effect/http"
import { ConditionalAnswers } from "../caching/ConditionalAnswers.js"
import { Boards } from "./Boards.js"

const encodeBoards = Schema.encodeSync(Schema.Array(Board))
const encoder = new TextEncoder()

/**
 * `GET /boards`: an organization's public boards, as one JSON array, tagged
 * and kept by `ConditionalAnswers` (decision 0010).
 */
export class PublicBoards extends Context.Service<PublicBoards, {
  readonly answer: (organizationId: string, ifNoneMatch: string | undefined) => Effect.Effect<HttpServerResponse.HttpServerResponse>
}>()("hearken/PublicBoards") {
  /** Needs `ConditionalAnswers` and `Boards`. */
  static readonly layerNoDeps = Layer.effect(
    PublicBoards,
    Effect.gen(function*() {
      const answers = yield* ConditionalAnswers
      const boards = yield* Boards
      return PublicBoards.of({
        answer: Effect.fn("PublicBoards.answer")(
          answers.respond("boards", (organizationId, _nowMs, _keep, oneServer) =>
            Effect.map(oneServer(boards.listPublic(organizationId)), (list) => encoder.encode(JSON.stringify(encodeBoards(list)))))
        )
      })
    })
  )
}
