import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, type SqlError, SqlSchema } from "effect/sql"
import { decoded } from "./decoded.js"

const FailedDelivery = Schema.Struct({
  id: Schema.String,
  messageId: Schema.String,
  endpointId: Schema.String,
  url: Schema.String,
  attempts: Schema.Number,
  lastStatus: Schema.NullOr(Schema.Number),
  lastError: Schema.NullOr(Schema.String),
  lastResponse: Schema.NullOr(Schema.String),
  failedAt: Schema.String
})
export type FailedDelivery = typeof FailedDelivery.Type

type Q<A> = Effect.Effect<A, SqlError.SqlError>

/** What the operator's commands (`webhooks-cli.ts`) do to the queue. */
export class WebhookOperatorRepo extends Context.Service<WebhookOperatorRepo, {
  readonly listFailed: (limit: number) => Q<ReadonlyArray<FailedDelivery>>
  /**
   * Queues a failed or succeeded delivery again, with a fresh set of
   * attempts and the same message; one still on its way is left alone.
   */
  readonly redeliver: (deliveryId: string) => Q<
    { readonly messageId: string; readonly previous: string; readonly queued: boolean } | undefined
  >
  /** Unpauses an endpoint; its held deliveries are due at once, each with a fresh set of attempts. */
  readonly resume: (endpointId: string) => Q<{ readonly wasPaused: boolean; readonly released: number } | undefined>
  /** Wakes every listening worker. */
  readonly notify: Q<void>
}>()("hearken/WebhookOperatorRepo") {
  static readonly layer = Layer.effect(
    WebhookOperatorRepo,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const listFailed = SqlSchema.findAll({
        Request: Schema.Number,
        Result: FailedDelivery,
        execute: (limit) =>
          sql`SELECT d.id, d.event_id AS "messageId", d.endpoint_id AS "endpointId", e.url, d.attempts,
              d.last_status AS "lastStatus", d.last_error AS "lastError", d.last_response AS "lastResponse",
              iso_ms(d.completed_at) AS "failedAt"
            FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
            WHERE d.status = 'failed'
            ORDER BY d.completed_at DESC, d.id
            LIMIT ${limit}`
      })

      const lockDelivery = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: Schema.Struct({ messageId: Schema.String, status: Schema.String, paused: Schema.Boolean }),
        execute: (deliveryId) =>
          sql`SELECT d.event_id AS "messageId", d.status, e.paused_at IS NOT NULL AS paused
            FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
            WHERE d.id = ${deliveryId} FOR UPDATE OF d`
      })

      const requeue = SqlSchema.void({
        Request: Schema.Struct({ deliveryId: Schema.String, status: Schema.Literals(["pending", "held"]) }),
        execute: ({ deliveryId, status }) =>
          sql`UPDATE webhook_deliveries SET status = ${status}, attempts = 0,
              next_attempt_at = '-infinity', lease_until = NULL, lease_token = NULL, completed_at = NULL
            WHERE id = ${deliveryId}`
      })

      const redeliver = (deliveryId: string) =>
        sql.withTransaction(Effect.gen(function*() {
          const found = yield* lockDelivery(deliveryId)
          if (Option.isNone(found)) return undefined
          const row = found.value
          // A pending or held delivery is still on its way: queueing it again could send it twice.
          if (row.status === "pending" || row.status === "held") return { messageId: row.messageId, previous: row.status, queued: false }
          yield* requeue({ deliveryId, status: row.paused ? "held" : "pending" })
          return { messageId: row.messageId, previous: row.status, queued: true }
        })).pipe(decoded)

      const lockEndpoint = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: Schema.Struct({ wasPaused: Schema.Boolean }),
        execute: (endpointId) =>
          sql`SELECT paused_at IS NOT NULL AS "wasPaused"
            FROM webhook_endpoints WHERE id = ${endpointId} FOR UPDATE`
      })

      const unpause = SqlSchema.void({
        Request: Schema.String,
        execute: (endpointId) =>
          sql`UPDATE webhook_endpoints SET paused_at = NULL, consecutive_failures = 0, failing_since = NULL, stalled = false
            WHERE id = ${endpointId}`
      })

      const releaseHeld = SqlSchema.findAll({
        Request: Schema.String,
        Result: Schema.Struct({ id: Schema.String }),
        execute: (endpointId) =>
          sql`UPDATE webhook_deliveries
            SET status = 'pending', attempts = 0, next_attempt_at = '-infinity'
            WHERE endpoint_id = ${endpointId} AND status = 'held'
            RETURNING id`
      })

      const resume = (endpointId: string) =>
        sql.withTransaction(Effect.gen(function*() {
          const endpoint = yield* lockEndpoint(endpointId)
          if (Option.isNone(endpoint)) return undefined
          yield* unpause(endpointId)
          const released = yield* releaseHeld(endpointId)
          return { wasPaused: endpoint.value.wasPaused, released: released.length }
        })).pipe(decoded)

      const notify = SqlSchema.void({
        Request: Schema.Void,
        execute: () => sql`SELECT pg_notify('hearken_webhooks', '')`
      })

      return WebhookOperatorRepo.of({
        listFailed: (limit) => listFailed(limit).pipe(decoded),
        redeliver,
        resume,
        notify: notify(undefined).pipe(decoded)
      })
    })
  )
}
