import {
  CreatedPost,
  DataValidationError,
  type FeedbackRequest,
  InternalServerError,
  NotFoundError,
  UnauthorizedError
} from "@hearken/api"
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { randomUUID } from "node:crypto"
import { Boards } from "../boards/Boards.js"
import { Sanitizer, truncate } from "../content/Sanitizer.js"
import { Posts } from "./Posts.js"

export const excerptLength = 280

export type FeedbackError = DataValidationError | NotFoundError | UnauthorizedError | InternalServerError

export class Feedback extends Context.Service<Feedback, {
  readonly create: (request: FeedbackRequest) => Effect.Effect<CreatedPost, FeedbackError>
}>()("hearken/Feedback") {
  static readonly layer = Layer.effect(
    Feedback,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const boards = yield* Boards
      const posts = yield* Posts
      const sanitizer = yield* Sanitizer

      const create = Effect.fn("Feedback.create")(function*(request: FeedbackRequest) {
        const board = yield* boards.find(request.organizationId, request.boardId)
        if (Option.isNone(board)) {
          return yield* new NotFoundError({ message: "boardId: no such board in this organization" })
        }
        if (board.value.visibility !== "public") {
          return yield* new DataValidationError({ message: "boardId: feedback cannot be submitted to a private board" })
        }
        if (request.token !== undefined) {
          // Identity tokens arrive with their own issue; until then none verifies, and none is ignored.
          return yield* new UnauthorizedError({ message: "token: identity tokens cannot be verified by this server" })
        }
        const statusId = yield* posts.defaultStatus(request.organizationId)
        if (Option.isNone(statusId)) {
          return yield* new InternalServerError({ message: "The organization has no post statuses configured" })
        }
        const content = sanitizer.post(request.content)
        const id = randomUUID()
        const inserted = yield* sql.withTransaction(posts.insert({
          id,
          organizationId: request.organizationId,
          boardId: request.boardId,
          title: request.title,
          content,
          excerpt: truncate(sanitizer.text(content), excerptLength),
          visibility: "public",
          statusId: statusId.value,
          metadata: request.metadata ?? {},
          source: "widget"
        })).pipe(Effect.orDie)
        return new CreatedPost({
          id,
          slug: inserted.slug,
          title: request.title,
          boardId: request.boardId,
          organizationId: request.organizationId,
          createdAt: inserted.createdAt
        })
      })

      return Feedback.of({ create })
    })
  )
}
