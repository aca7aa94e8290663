import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, type SqlError, SqlSchema, type Statement } from "effect/sql"
import { type RowOutcome, upsertOutcome } from "../sql/upsertOutcome.js"
import { decoded } from "./decoded.js"

/** An endpoint as a fixture gives it. */
export interface EndpointFields {
  readonly id: string
  readonly url: string
  readonly secret: string
  readonly previousSecrets?: ReadonlyArray<string> | undefined
  readonly events: ReadonlyArray<string>
}

/** An event for the outbox: written with the rows it describes, delivered later. */
export interface OutboxEvent {
  readonly id: string
  readonly organizationId: string
  readonly type: string
  readonly body: string
  readonly traceparent: string | null
}

const Strings = Schema.Array(Schema.String)

const OutboxEvent = Schema.Struct({
  id: Schema.String,
  organizationId: Schema.String,
  type: Schema.String,
  body: Schema.String,
  traceparent: Schema.NullOr(Schema.String)
})

/**
 * The outbox write: the event and one delivery per endpoint of the organization subscribed to
 * its type (held when the endpoint is paused), nothing when none is; one row, the number of
 * deliveries. Exported so that the load bench's baseline sends the server's very statement.
 */
export const enqueueStatement = (sql: Statement.Constructor, event: OutboxEvent) =>
  sql`WITH endpoints AS (
      SELECT id, paused_at FROM webhook_endpoints
      WHERE organization_id = ${event.organizationId} AND ${event.type} = ANY (events)
    ), event AS (
      INSERT INTO webhook_events (id, organization_id, type, body, traceparent)
      SELECT ${event.id}, ${event.organizationId}, ${event.type}, ${event.body}, ${event.traceparent}
      WHERE EXISTS (SELECT 1 FROM endpoints)
      RETURNING id
    ), deliveries AS (
      INSERT INTO webhook_deliveries (id, event_id, endpoint_id, status)
      SELECT 'whd_' || replace(gen_random_uuid()::text, '-', ''), event.id, endpoints.id,
        CASE WHEN endpoints.paused_at IS NULL THEN 'pending' ELSE 'held' END
      FROM event, endpoints
      RETURNING 1
    )
    SELECT count(*)::int AS count FROM deliveries`

type Q<A> = Effect.Effect<A, SqlError.SqlError>

/** The write side of webhooks: the outbox, and the endpoints a fixture import keeps. */
export class OutboxRepo extends Context.Service<OutboxRepo, {
  /**
   * Fixture import: inserts an endpoint, or updates it when its URL, secrets or events differ;
   * yields what it did (`upsertOutcome`), null when the id belongs to another organization.
   */
  readonly upsertEndpoint: (organizationId: string, endpoint: EndpointFields) => Q<ReadonlyArray<{ readonly outcome: RowOutcome | null }>>
  /**
   * Fixture import: deletes the organization's endpoints other than `keep`, with their deliveries
   * (pending ones are dropped, never sent; one in flight finds its row gone and records nothing).
   * Yields each deleted endpoint and how many of its deliveries had not been delivered yet.
   */
  readonly deleteEndpointsExcept: (organizationId: string, keep: ReadonlyArray<string>) => Q<
    ReadonlyArray<{ readonly id: string; readonly undelivered: number }>
  >
  /**
   * The outbox write (`enqueueStatement`), inside the caller's transaction: the event and one
   * delivery per endpoint of the organization subscribed to `type`. Nothing when none is.
   * Yields the number of deliveries.
   */
  readonly enqueue: (event: OutboxEvent) => Q<number>
}>()("hearken/OutboxRepo") {
  static readonly layer = Layer.effect(
    OutboxRepo,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const textArray = (values: ReadonlyArray<string>) =>
        sql`ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(values)}::jsonb))`

      // `xmax = 0`: the row was inserted, not updated.
      const upsertEndpoint = SqlSchema.findAll({
        Request: Schema.Struct({
          organizationId: Schema.String,
          id: Schema.String,
          url: Schema.String,
          secret: Schema.String,
          previousSecrets: Strings,
          events: Strings
        }),
        Result: Schema.Struct({ outcome: Schema.NullOr(Schema.Literals(["added", "changed", "unchanged"])) }),
        execute: (endpoint) =>
          upsertOutcome(
            sql,
            sql<{ inserted: boolean }>`INSERT INTO webhook_endpoints (id, organization_id, url, secret, previous_secrets, events)
              VALUES (${endpoint.id}, ${endpoint.organizationId}, ${endpoint.url}, ${endpoint.secret},
                ${textArray(endpoint.previousSecrets)}, ${textArray(endpoint.events)})
              ON CONFLICT (id) DO UPDATE SET url = EXCLUDED.url, secret = EXCLUDED.secret,
                previous_secrets = EXCLUDED.previous_secrets, events = EXCLUDED.events
              WHERE webhook_endpoints.organization_id = EXCLUDED.organization_id
                AND (webhook_endpoints.url, webhook_endpoints.secret, webhook_endpoints.previous_secrets, webhook_endpoints.events)
                  IS DISTINCT FROM (EXCLUDED.url, EXCLUDED.secret, EXCLUDED.previous_secrets, EXCLUDED.events)
              RETURNING (xmax = 0) AS inserted`,
            "webhook_endpoints",
            endpoint.id,
            endpoint.organizationId
          )
      })

      const deleteEndpoints = SqlSchema.findAll({
        Request: Schema.Struct({ organizationId: Schema.String, keep: Strings }),
        Result: Schema.Struct({ id: Schema.String, undelivered: Schema.Number }),
        execute: ({ keep, organizationId }) =>
          sql`WITH gone AS (
              SELECT e.id,
                (SELECT count(*)::int FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.status IN ('pending', 'held')) AS undelivered
              FROM webhook_endpoints e
              WHERE e.organization_id = ${organizationId} AND NOT (e.id = ANY (${textArray(keep)}))
              ORDER BY e.id
              FOR UPDATE
            ), deleted AS (
              DELETE FROM webhook_endpoints e USING gone WHERE e.id = gone.id RETURNING e.id
            )
            SELECT gone.id, gone.undelivered FROM gone JOIN deleted ON deleted.id = gone.id ORDER BY gone.id`
      })

      const settleOrganization = SqlSchema.void({
        Request: Schema.String,
        execute: (organizationId) => sql`SELECT hearken_webhook_settle('{}', ARRAY[${organizationId}]::text[])`
      })

      // The organization's queue rows are settled afterwards: its deleted endpoints' deliveries no longer count.
      const deleteEndpointsExcept = (organizationId: string, keep: ReadonlyArray<string>) =>
        deleteEndpoints({ organizationId, keep }).pipe(
          Effect.tap((rows) => rows.length === 0 ? Effect.void : settleOrganization(organizationId)),
          decoded
        )

      const enqueue = SqlSchema.findOneOption({
        Request: OutboxEvent,
        Result: Schema.Struct({ count: Schema.Number }),
        execute: (event) => enqueueStatement(sql, event)
      })

      return OutboxRepo.of({
        upsertEndpoint: (organizationId, endpoint) =>
          upsertEndpoint({
            organizationId,
            id: endpoint.id,
            url: endpoint.url,
            secret: endpoint.secret,
            previousSecrets: endpoint.previousSecrets ?? [],
            events: endpoint.events
          }).pipe(decoded),
        deleteEndpointsExcept,
        enqueue: (event) =>
          enqueue(event).pipe(
            Effect.map((found) => Option.match(found, { onNone: () => 0, onSome: (row) => row.count })),
            decoded
          )
      })
    })
  )
}
