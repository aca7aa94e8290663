import {
  CreatedPost,
  DataValidationError,
  type FeedbackRequest,
  InternalServerError,
  NotFoundError,
  UnauthorizedError
} from "@hearken/api/effect"
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { createHash, randomUUID } from "node:crypto"
import { Boards } from "../boards/Boards.js"
import { EmbeddingSignal } from "../embeddings/EmbeddingSignal.js"
import { Sanitizer, truncate } from "../content/Sanitizer.js"
import { IdempotencyKeys } from "../idempotency/IdempotencyKeys.js"
import { Contacts } from "../identity/Contacts.js"
import { IdentityTokens } from "../identity/IdentityTokens.js"
import { orDie } from "../sql/SqlFailure.js"
import { WebhookOutbox } from "../webhooks/Outbox.js"
import { Posts } from "./Posts.js"

export const excerptLength = 280

export type FeedbackError = DataValidationError | NotFoundError | UnauthorizedError | InternalServerError

/**
 * What makes two requests "the same body" for `Idempotency-Key`: the decoded
 * request (unknown fields are ignored, as they are everywhere; metadata in key
 * order), hashed.
 */
export const requestHash = (request: FeedbackRequest) =>
  createHash("sha256").update(JSON.stringify([
    request.organizationId,
    request.boardId,
    request.title,
    request.content,
    Object.entries(request.metadata ?? {}).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0),
    request.token ?? null
  ])).digest("base64url")

const encodeCreated = Schema.encodeSync(CreatedPost)
const decodeCreated = Schema.decodeUnknownSync(CreatedPost)

export class Feedback extends Context.Service<Feedback, {
  /** Creates the post; with an `Idempotency-Key`, at most once per key and organization (docs/api.md: "Retries: Idempotency-Key"). */
  readonly create: (request: FeedbackRequest, idempotencyKey?: string | undefined) => Effect.Effect<CreatedPost, FeedbackError>
}>()("hearken/Feedback") {
  /**
   * Needs `Boards`, `Posts`, `Sanitizer`, `IdentityTokens`, `Contacts`,
   * `WebhookOutbox`, `EmbeddingSignal` and `IdempotencyKeys`.
   */
  static readonly layerNoDeps = Layer.effect(
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
      const keys = yield* IdempotencyKeys

      const createPost = Effect.fn("Feedback.createPost")(function*(request: FeedbackRequest) {
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
        const content = yield* Effect.sync(() => sanitizer.post(request.content)).pipe(Effect.withSpan("Sanitizer.post"))
        const text = yield* Effect.sync(() => sanitizer.text(content)).pipe(Effect.withSpan("Sanitizer.text"))
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
        })).pipe(orDie)
        return new CreatedPost({
          id,
          slug: inserted.slug,
          title: request.title,
          boardId: request.boardId,
          organizationId: request.organizationId,
          createdAt: inserted.createdAt
        })
      })

      /**
       * One transaction holds the key's lock while the post is created, so a
       * concurrent request with the key waits and then finds the answer; a
       * failure rolls back and remembers nothing.
       */
      const createOnce = Effect.fn("Feedback.createOnce")(function*(request: FeedbackRequest, key: string) {
        const hash = requestHash(request)
        const nowMs = yield* Clock.currentTimeMillis
        return yield* sql.withTransaction(Effect.gen(function*() {
          yield* keys.lock(request.organizationId, key)
          const first = yield* keys.find(request.organizationId, key, nowMs)
          if (first !== undefined) {
            if (first.requestHash !== hash) {
              return yield* new DataValidationError({ message: "Idempotency-Key: already used with a different request body" })
            }
            return decodeCreated(first.response)
          }
          const post = yield* createPost(request)
          yield* keys.remember(request.organizationId, key, hash, encodeCreated(post), nowMs)
          return post
        })).pipe(orDie)
      })

      return Feedback.of({
        create: (request, idempotencyKey) =>
          idempotencyKey === undefined ? createPost(request) : createOnce(request, idempotencyKey)
      })
    })
  )

  static readonly layer = this.layerNoDeps.pipe(Layer.provide([
    Boards.layer,
    Posts.layer,
    Sanitizer.layer,
    IdentityTokens.layer,
    Contacts.layer,
    WebhookOutbox.layer,
    EmbeddingSignal.layer,
    IdempotencyKeys.layer
  ]))
}
