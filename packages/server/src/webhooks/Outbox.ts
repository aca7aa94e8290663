import { PostCreatedEvent, postCreatedEventType } from "@hearken/api/effect"
import { Context, Effect, Layer, Schema } from "effect"
import type { SqlError } from "effect/sql"
import { randomUUID } from "node:crypto"
import { currentTraceparent } from "../observability/Tracing.js"
import { OutboxRepo } from "./OutboxRepo.js"

const encode = Schema.encodeSync(Schema.fromJsonString(PostCreatedEvent))

/** The transactional outbox: events are written with the rows they describe, and delivered later. */
export class WebhookOutbox extends Context.Service<WebhookOutbox, {
  /**
   * Records `feedback.post.created` for every subscribed endpoint of the
   * post's organization. Runs inside the caller's transaction, so the event
   * exists exactly when the post does.
   */
  readonly postCreated: (data: PostCreatedEvent["data"]) => Effect.Effect<void, SqlError.SqlError>
}>()("hearken/WebhookOutbox") {
  /** Needs the `OutboxRepo`. */
  static readonly layerNoDeps = Layer.effect(
    WebhookOutbox,
    Effect.gen(function*() {
      const repo = yield* OutboxRepo
      return WebhookOutbox.of({
        postCreated: Effect.fn("WebhookOutbox.postCreated")(function*(data) {
          const body = encode({ type: postCreatedEventType, timestamp: data.createdAt, data })
          yield* repo.enqueue({
            id: `msg_${randomUUID().replaceAll("-", "")}`,
            organizationId: data.organizationId,
            type: postCreatedEventType,
            body,
            // Its deliveries link back to this request's trace.
            traceparent: yield* currentTraceparent
          })
        })
      })
    })
  )

  static readonly layer = this.layerNoDeps.pipe(Layer.provide(OutboxRepo.layer))
}
