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
import { EmbeddingSignal } from "../embeddings/Embedder.js"
import { Sanitizer, truncate } from "../content/Sanitizer.js"
import { Contacts } from "../identity/Contacts.js"
import { IdentityTokens } from "../identity/IdentityTokens.js"
import { WebhookOutbox } from "../webhooks/Outbox.js"
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
      const identity = yield* IdentityTokens
      const contacts = yield* Contacts
      const outbox = yield* WebhookOutbox
      const embedding = yield* EmbeddingSignal

      const create = Effect.fn("Feedback.create")(function*(request: FeedbackRequest) {
        const board = yield* boards.find(request.organizationId, request.boardId)
        if (Option.isNone(board)) {
          return yield* new NotFoundError({ message: "boardId: no such board in this organization" })
        }
        if (board.value.visibility !== "public") {
          return yield* new DataValidationError({ message: "boardId: feedback cannot be submitted to a private board" })
        }
        const claims = request.token === undefined
          ? undefined
          : yield* identity.verify(request.organizationId, request.token)
        const statusId = yield* posts.defaultStatus(request.organizationId)
        if (Option.isNone(statusId)) {
          return yield* new InternalServerError({ message: "The organization has no post statuses configured" })
        }
        const content = sanitizer.post(request.content)
        const text = sanitizer.text(content)
        const id = randomUUID()
        const metadata = request.metadata ?? {}
        // The contact, its companies, the post and its webhook event commit together, or not at all.
        const inserted = yield* sql.withTransaction(Effect.gen(function*() {
          const contactId = claims === undefined ? null : yield* contacts.upsert(request.organizationId, claims)
          const post = yield* posts.insert({
            id,
            organizationId: request.organizationId,
            boardId: request.boardId,
            title: request.title,
            content,
            text,
            excerpt: truncate(text, excerptLength),
            visibility: "public",
            statusId: statusId.value,
            metadata,
            source: "widget",
            contactId
          })
          yield* outbox.postCreated({
            id,
            slug: post.slug,
            title: request.title,
            boardId: request.boardId,
            organizationId: request.organizationId,
            createdAt: post.createdAt,
            statusId: statusId.value,
            contactId,
            metadata
          })
          // Embedded in the background once committed: the answer does not wait for the embeddings API.
          yield* sql.afterCommit(embedding.postCreated(id))
          return post
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
