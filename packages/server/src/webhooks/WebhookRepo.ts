import { Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { type RowOutcome, upsertOutcome } from "../sql/upsertOutcome.js"

/** An endpoint as a fixture gives it. */
export interface EndpointFields {
  readonly id: string
  readonly url: string
  readonly secret: string
  readonly previousSecrets?: ReadonlyArray<string> | undefined
  readonly events: ReadonlyArray<string>
}

/** A delivery a worker holds under a lease, with what it needs to send it. */
export interface ClaimedDelivery {
  readonly id: string
  /** This attempt's number: attempts are counted when claimed, so one a worker died in counts too. */
  readonly attempts: number
  readonly leaseToken: string
  /** The `webhook-id`. */
  readonly messageId: string
  readonly body: string
  readonly endpointId: string
  readonly organizationId: string
  /** The endpoint's last recorded attempt had stalled when this was claimed: it is in the stalled lane. */
  readonly stalled: boolean
  readonly url: string
  readonly secret: string
  /** Secrets it still signs with during a rotation (fixture `previousSecrets`). */
  readonly previousSecrets: ReadonlyArray<string>
  /** The W3C `traceparent` of the request that created the event, when it was traced. */
  readonly traceparent: string | null
}

/** How much one worker may have in flight (`limits.ts`). */
export interface ClaimLimits {
  readonly perEndpoint: number
  readonly perStalledEndpoint: number
  readonly perOrganization: number
  /** To all endpoints in the stalled lane together. */
  readonly stalledSlots: number
}

/** What the claiming worker has in flight already. */
export interface Load {
  /** Attempts by endpoint id. */
  readonly endpoints: ReadonlyMap<string, number>
  /** Attempts by organization id. */
  readonly organizations: ReadonlyMap<string, number>
  /** Attempts to endpoints that were in the stalled lane when claimed. */
  readonly stalled: number
  /** Endpoints with a late attempt (no answer yet): they get nothing more until it ends. */
  readonly late: ReadonlySet<string>
}

export const noLoad: Load = { endpoints: new Map(), organizations: new Map(), stalled: 0, late: new Set() }

const add = (counts: ReadonlyMap<string, number>, keys: ReadonlyArray<string>) => {
  const sum = new Map(counts)
  for (const key of keys) sum.set(key, (sum.get(key) ?? 0) + 1)
  return sum
}

/** `load` with `leased` in flight too. */
export const withLeased = (load: Load, leased: ReadonlyArray<ClaimedDelivery>): Load => ({
  endpoints: add(load.endpoints, leased.map((d) => d.endpointId)),
  organizations: add(load.organizations, leased.map((d) => d.organizationId)),
  stalled: load.stalled + leased.filter((d) => d.stalled).length,
  late: load.late
})

export interface Claim {
  readonly nowMs: number
  /** Deliveries to take at most: the worker's free slots. */
  readonly limit: number
  readonly limits: ClaimLimits
  readonly load: Load
  readonly leaseMs: number
  readonly token: string
}

/** How one attempt ends for the delivery row. */
export interface Completion {
  readonly status: "pending" | "succeeded" | "failed"
  readonly nowMs: number
  /** When `status` is pending: when the next attempt is due. */
  readonly nextAttemptMs?: number | undefined
  readonly httpStatus: number | null
  readonly error: string | null
  readonly response: string | null
  /** The attempt failed after holding its slot `lateAfterMs` or more: its endpoint goes to the stalled lane. */
  readonly stalled: boolean
}

export interface FailedDelivery {
  readonly id: string
  readonly messageId: string
  readonly endpointId: string
  readonly url: string
  readonly attempts: number
  readonly lastStatus: number | null
  readonly lastError: string | null
  readonly lastResponse: string | null
  readonly failedAt: string
}

/** What recording an attempt did. */
export interface Recorded {
  /** False when the lease was no longer this worker's: nothing was written. */
  readonly recorded: boolean
  /** The endpoint's failed attempts in a row, after this one. */
  readonly consecutiveFailures: number
  /** This very failure paused the endpoint. */
  readonly newlyPaused: boolean
}

export interface PausePolicy {
  /** Consecutive failed attempts that may pause an endpoint… */
  readonly failures: number
  /** …once the first of them is at least this old. */
  readonly stretchMs: number
}

/** The queue, database-wide, as the metrics' gauges show it (`WebhookGauges.ts`). */
export interface QueueState {
  /** Pending deliveries due now. */
  readonly due: number
  /** Pending deliveries waiting for a retry later. */
  readonly scheduled: number
  /** Deliveries held while their endpoint is paused. */
  readonly held: number
  /** How long the oldest due delivery has been waiting; 0 when none is due. */
  readonly oldestDueSeconds: number
  /** Endpoints paused after repeated failures. */
  readonly paused: number
}

const iso = (ms: number) => new Date(ms).toISOString()

type Sql = SqlClient.SqlClient
type Q<A> = Effect.Effect<A, SqlError.SqlError>

/** Every statement on `webhook_endpoints`, `webhook_events` and `webhook_deliveries`. */
export class WebhookRepo extends Context.Service<WebhookRepo, {
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
   * The outbox write, inside the caller's transaction: the event and one
   * delivery per endpoint of the organization subscribed to `type`. Nothing
   * when none is. Yields the number of deliveries.
   */
  readonly enqueue: (event: {
    readonly id: string
    readonly organizationId: string
    readonly type: string
    readonly body: string
    readonly traceparent: string | null
  }) => Q<number>
  /**
   * Leases up to `limit` due deliveries of endpoints that are not paused
   * (`FOR UPDATE SKIP LOCKED`), within `limits` given the caller's `load`,
   * organizations taking turns and, within each, its endpoints; and counts
   * their attempt.
   */
  readonly claim: (claim: Claim) => Q<ReadonlyArray<ClaimedDelivery>>
  /**
   * Records one attempt, if the lease is still ours, in one statement with
   * its endpoint's streak: a success ends it; a failure extends it, and
   * pauses the endpoint under `policy` (holding its waiting deliveries).
   * Idempotent: a retry after a lost reply matches no row.
   */
  readonly complete: (delivery: ClaimedDelivery, completion: Completion, policy: PausePolicy) => Q<Recorded>
  /** Gives a delivery back at once (the worker is stopping mid-attempt). */
  readonly releaseLease: (delivery: ClaimedDelivery) => Q<void>
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
  /** The queue's depth and age and the paused endpoints, in one statement. */
  readonly queueState: Q<QueueState | undefined>
}>()("hearken/WebhookRepo") {
  static readonly layer = Layer.effect(
    WebhookRepo,
    Effect.gen(function*() {
      const sql: Sql = yield* SqlClient.SqlClient

      const textArray = (values: ReadonlyArray<string>) =>
        sql`ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(values)}::jsonb))`

      // `xmax = 0`: the row was inserted, not updated.
      const upsertEndpoint = (organizationId: string, endpoint: EndpointFields) =>
        upsertOutcome(
          sql,
          sql<{ inserted: boolean }>`INSERT INTO webhook_endpoints (id, organization_id, url, secret, previous_secrets, events)
            VALUES (${endpoint.id}, ${organizationId}, ${endpoint.url}, ${endpoint.secret},
              ${textArray(endpoint.previousSecrets ?? [])}, ${textArray(endpoint.events)})
            ON CONFLICT (id) DO UPDATE SET url = EXCLUDED.url, secret = EXCLUDED.secret,
              previous_secrets = EXCLUDED.previous_secrets, events = EXCLUDED.events
            WHERE webhook_endpoints.organization_id = EXCLUDED.organization_id
              AND (webhook_endpoints.url, webhook_endpoints.secret, webhook_endpoints.previous_secrets, webhook_endpoints.events)
                IS DISTINCT FROM (EXCLUDED.url, EXCLUDED.secret, EXCLUDED.previous_secrets, EXCLUDED.events)
            RETURNING (xmax = 0) AS inserted`,
          "webhook_endpoints",
          endpoint.id,
          organizationId
        )

      // The organization's queue rows are settled afterwards: its deleted endpoints' deliveries no longer count.
      const deleteEndpointsExcept = (organizationId: string, keep: ReadonlyArray<string>) =>
        sql<{ id: string; undelivered: number }>`WITH gone AS (
            SELECT e.id,
              (SELECT count(*)::int FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.status IN ('pending', 'held')) AS undelivered
            FROM webhook_endpoints e
            WHERE e.organization_id = ${organizationId} AND NOT (e.id = ANY (${textArray(keep)}))
            ORDER BY e.id
            FOR UPDATE
          ), deleted AS (
            DELETE FROM webhook_endpoints e USING gone WHERE e.id = gone.id RETURNING e.id
          )
          SELECT gone.id, gone.undelivered FROM gone JOIN deleted ON deleted.id = gone.id ORDER BY gone.id`.pipe(
          Effect.tap((rows) =>
            rows.length === 0 ? Effect.void : Effect.asVoid(sql`SELECT hearken_webhook_settle('{}', ARRAY[${organizationId}]::text[])`)
          )
        )

      const enqueue = (event: {
        readonly id: string
        readonly organizationId: string
        readonly type: string
        readonly body: string
        readonly traceparent: string | null
      }) =>
        sql<{ count: number }>`WITH endpoints AS (
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
          SELECT count(*)::int AS count FROM deliveries`.pipe(Effect.map((rows) => rows[0]?.count ?? 0))

      // One claim statement: turns by organization, then by endpoint within it (decision 0026).
      // The queue tables say which organizations and endpoints have a delivery that can be claimed
      // now, in turn order (served longest ago first), so the claim reads what it may take and
      // little else, however many endpoints have work. Each organization is allotted an even part
      // of the slots (within what it has left of its cap), each of its endpoints an even part of
      // that, read from the front of the endpoint's own queue. Then every organization's first
      // delivery, then every second…; the stalled lane only up to what it has left of its slots.
      // Only the rows taken are locked, skipping those a concurrent claim holds. Yields what it
      // leased, and whether it found early rows (which it settles before it yields).
      const claimOnce = (c: Claim) => {
        const now = iso(c.nowMs)
        const { limits, load } = c
        const byEndpoint = JSON.stringify(Object.fromEntries(load.endpoints))
        const byOrganization = JSON.stringify(Object.fromEntries(load.organizations))
        const late = JSON.stringify(Object.fromEntries([...load.late].map((id) => [id, true])))
        const stalledRoom = Math.max(0, Math.min(limits.stalledSlots - load.stalled, c.limit))
        // Organizations with something in flight may offer nothing (their endpoints are at their
        // caps or late): look that many further.
        const lookahead = load.organizations.size
        type Row = { [K in keyof ClaimedDelivery]: ClaimedDelivery[K] | null } & {
          readonly earlyEndpoints: ReadonlyArray<string> | null
          readonly earlyOrganizations: ReadonlyArray<string> | null
        }
        return sql<Row>`WITH orgs AS (
            SELECT o.organization_id, o.stalled, o.turn,
              LEAST(
                ${limits.perOrganization} - COALESCE((${byOrganization}::jsonb ->> o.organization_id)::int, 0),
                ceil((CASE WHEN o.stalled THEN ${stalledRoom} ELSE ${c.limit} END)::numeric / count(*) OVER (PARTITION BY o.stalled))
              )::int AS share
            FROM (
              (SELECT organization_id, stalled, turn FROM webhook_organization_queues
                WHERE NOT stalled AND turn <= ${now}::timestamptz
                  AND COALESCE((${byOrganization}::jsonb ->> organization_id)::int, 0) < ${limits.perOrganization}
                ORDER BY turn, organization_id LIMIT ${c.limit + lookahead})
              UNION ALL
              (SELECT organization_id, stalled, turn FROM webhook_organization_queues
                WHERE stalled AND turn <= ${now}::timestamptz AND ${stalledRoom} > 0
                  AND COALESCE((${byOrganization}::jsonb ->> organization_id)::int, 0) < ${limits.perOrganization}
                ORDER BY turn, organization_id LIMIT ${stalledRoom + lookahead})
            ) o
          ), endpoints AS (
            SELECT o.organization_id, o.stalled, o.turn AS org_turn, q.endpoint_id, q.turn, o.share AS org_share, q.room,
              count(*) OVER (PARTITION BY o.organization_id, o.stalled) AS n
            FROM orgs o CROSS JOIN LATERAL (
              SELECT q.endpoint_id, q.turn,
                (CASE WHEN q.stalled THEN ${limits.perStalledEndpoint} ELSE ${limits.perEndpoint} END)
                  - COALESCE((${byEndpoint}::jsonb ->> q.endpoint_id)::int, 0) AS room
              FROM webhook_endpoint_queues q
              WHERE q.organization_id = o.organization_id AND q.stalled = o.stalled AND q.turn <= ${now}::timestamptz
                AND (${late}::jsonb -> q.endpoint_id) IS NULL
                AND COALESCE((${byEndpoint}::jsonb ->> q.endpoint_id)::int, 0)
                  < CASE WHEN q.stalled THEN ${limits.perStalledEndpoint} ELSE ${limits.perEndpoint} END
              ORDER BY q.turn, q.endpoint_id
              LIMIT o.share
            ) q
            WHERE o.share > 0
          ), candidates AS (
            SELECT e.organization_id, e.stalled, e.org_turn, e.turn AS endpoint_turn, e.endpoint_id, head.id,
              row_number() OVER (PARTITION BY e.endpoint_id ORDER BY head.next_attempt_at, head.id) AS round
            FROM endpoints e CROSS JOIN LATERAL (
              SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
              WHERE d.endpoint_id = e.endpoint_id AND d.status = 'pending' AND d.next_attempt_at <= ${now}::timestamptz
                AND (d.lease_until IS NULL OR d.lease_until <= ${now}::timestamptz)
              ORDER BY d.next_attempt_at, d.id
              LIMIT LEAST(e.room, ceil(e.org_share::numeric / e.n))::int
            ) head
          ), turns AS (
            SELECT c.*, row_number() OVER (PARTITION BY c.organization_id ORDER BY c.round, c.endpoint_turn, c.endpoint_id) AS org_round
            FROM candidates c
          ), allowed AS (
            SELECT t.*, row_number() OVER (PARTITION BY t.stalled ORDER BY t.org_round, t.org_turn, t.organization_id) AS lane_rank
            FROM turns t
            WHERE t.org_round <= ${limits.perOrganization} - COALESCE((${byOrganization}::jsonb ->> t.organization_id)::int, 0)
          ), due AS (
            SELECT d.id FROM allowed a JOIN webhook_deliveries d ON d.id = a.id
            WHERE (NOT a.stalled OR a.lane_rank <= ${stalledRoom})
              AND d.status = 'pending' AND d.next_attempt_at <= ${now}::timestamptz
              AND (d.lease_until IS NULL OR d.lease_until <= ${now}::timestamptz)
            ORDER BY a.org_round, a.org_turn, a.organization_id
            LIMIT ${c.limit}
            FOR UPDATE OF d SKIP LOCKED
          ), leased AS (
            UPDATE webhook_deliveries d
            SET lease_until = ${iso(c.nowMs + c.leaseMs)}::timestamptz, lease_token = ${c.token}, attempts = d.attempts + 1,
              leased_at = ${now}::timestamptz
            FROM due, webhook_events ev, webhook_endpoints e
            WHERE d.id = due.id AND ev.id = d.event_id AND e.id = d.endpoint_id
            RETURNING d.id, d.attempts, d.lease_token AS "leaseToken", ev.id AS "messageId", ev.body,
              e.id AS "endpointId", e.organization_id AS "organizationId", e.stalled, e.url, e.secret,
              e.previous_secrets AS "previousSecrets", ev.traceparent
          ), early AS (
            -- Rows that said "ready" with nothing behind them that can be claimed now.
            SELECT
              (SELECT json_agg(e.endpoint_id) FROM endpoints e
                WHERE NOT EXISTS (SELECT 1 FROM candidates c WHERE c.endpoint_id = e.endpoint_id)) AS endpoints,
              (SELECT json_agg(o.organization_id) FROM orgs o
                WHERE NOT EXISTS (SELECT 1 FROM endpoints e WHERE e.organization_id = o.organization_id AND e.stalled = o.stalled)
                  AND NOT EXISTS (
                    SELECT 1 FROM webhook_endpoint_queues q
                    WHERE q.organization_id = o.organization_id AND q.stalled = o.stalled AND q.turn <= ${now}::timestamptz
                  )) AS organizations
          )
          SELECT leased.*, early.endpoints AS "earlyEndpoints", early.organizations AS "earlyOrganizations"
          FROM early LEFT JOIN leased ON true`.pipe(
          Effect.flatMap((rows) => {
            const endpoints = rows[0]?.earlyEndpoints ?? []
            const organizations = rows[0]?.earlyOrganizations ?? []
            const leased = rows.flatMap(({ earlyEndpoints: _, earlyOrganizations: __, ...delivery }) =>
              delivery.id === null ? [] : [delivery as ClaimedDelivery]
            )
            if (endpoints.length === 0 && organizations.length === 0) return Effect.succeed({ leased, early: false })
            // Settled apart from the claim, so that its locks come in the one order every settle takes.
            return sql`SELECT hearken_webhook_settle(
                ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(endpoints)}::jsonb)),
                ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(organizations)}::jsonb)))`.pipe(
              Effect.as({ leased, early: true })
            )
          })
        )
      }

      // Early rows took part of the slots' shares: once they are settled, the claim looks again.
      const claim = (c: Claim): Q<ReadonlyArray<ClaimedDelivery>> =>
        claimOnce(c).pipe(
          Effect.flatMap(({ leased, early }) =>
            !early || leased.length >= c.limit
              ? Effect.succeed(leased)
              : claimOnce({ ...c, limit: c.limit - leased.length, load: withLeased(c.load, leased) }).pipe(
                Effect.map((again) => [...leased, ...again.leased])
              )
          )
        )

      const complete = (delivery: ClaimedDelivery, c: Completion, policy: PausePolicy) => {
        const now = iso(c.nowMs)
        const failed = c.status !== "succeeded"
        // The endpoint's old row is read under its lock, so concurrent outcomes count exactly and
        // exactly one of them sees the pause happen. A success locks nothing unless there is a
        // streak to end or a stalled lane to leave.
        return sql<{ consecutiveFailures: number | null; newlyPaused: boolean | null }>`WITH done AS (
            UPDATE webhook_deliveries SET
              status = ${c.status},
              next_attempt_at = COALESCE(${c.nextAttemptMs === undefined ? null : iso(c.nextAttemptMs)}::timestamptz, next_attempt_at),
              lease_until = NULL,
              lease_token = NULL,
              last_attempt_at = ${now}::timestamptz,
              last_status = ${c.httpStatus},
              last_error = ${c.error},
              last_response = ${c.response},
              completed_at = ${c.status === "pending" ? null : now}::timestamptz
            WHERE id = ${delivery.id} AND lease_token = ${delivery.leaseToken}
            RETURNING id
          ), old AS (
            SELECT id, consecutive_failures, failing_since, paused_at FROM webhook_endpoints
            WHERE id = ${delivery.endpointId} AND EXISTS (SELECT 1 FROM done)
              AND (${failed} OR consecutive_failures > 0 OR stalled)
            FOR UPDATE
          ), streak AS (
            UPDATE webhook_endpoints e SET
              consecutive_failures = CASE WHEN ${failed} THEN old.consecutive_failures + 1 ELSE 0 END,
              stalled = ${failed && c.stalled},
              failing_since = CASE WHEN ${failed} THEN COALESCE(old.failing_since, ${now}::timestamptz) END,
              paused_at = CASE
                WHEN ${failed} AND old.paused_at IS NULL AND old.consecutive_failures + 1 >= ${policy.failures}
                  AND COALESCE(old.failing_since, ${now}::timestamptz) <= ${iso(c.nowMs - policy.stretchMs)}::timestamptz
                THEN ${now}::timestamptz ELSE old.paused_at END
            FROM old WHERE e.id = old.id
            RETURNING e.consecutive_failures, (old.paused_at IS NULL AND e.paused_at IS NOT NULL) AS newly_paused
          ), held AS (
            UPDATE webhook_deliveries SET status = 'held'
            WHERE endpoint_id = ${delivery.endpointId} AND status = 'pending' AND lease_token IS NULL
              AND id <> ${delivery.id} AND EXISTS (SELECT 1 FROM streak WHERE newly_paused)
          )
          SELECT streak.consecutive_failures AS "consecutiveFailures", streak.newly_paused AS "newlyPaused"
          FROM done LEFT JOIN streak ON true`.pipe(
            Effect.map(([row]): Recorded =>
              row === undefined
                ? { recorded: false, consecutiveFailures: 0, newlyPaused: false }
                : { recorded: true, consecutiveFailures: row.consecutiveFailures ?? 0, newlyPaused: row.newlyPaused === true }
            )
          )
      }

      const releaseLease = (delivery: ClaimedDelivery) =>
        sql`UPDATE webhook_deliveries SET lease_until = NULL, lease_token = NULL
          WHERE id = ${delivery.id} AND lease_token = ${delivery.leaseToken}`.pipe(Effect.asVoid)

      const listFailed = (limit: number) =>
        sql<FailedDelivery>`SELECT d.id, d.event_id AS "messageId", d.endpoint_id AS "endpointId", e.url, d.attempts,
            d.last_status AS "lastStatus", d.last_error AS "lastError", d.last_response AS "lastResponse",
            iso_ms(d.completed_at) AS "failedAt"
          FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
          WHERE d.status = 'failed'
          ORDER BY d.completed_at DESC, d.id
          LIMIT ${limit}`

      const redeliver = (deliveryId: string) =>
        sql.withTransaction(Effect.gen(function*() {
          const [row] = yield* sql<{ messageId: string; status: string; paused: boolean }>`SELECT d.event_id AS "messageId",
              d.status, e.paused_at IS NOT NULL AS paused
            FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
            WHERE d.id = ${deliveryId} FOR UPDATE OF d`
          if (row === undefined) return undefined
          // A pending or held delivery is still on its way: queueing it again could send it twice.
          if (row.status === "pending" || row.status === "held") return { messageId: row.messageId, previous: row.status, queued: false }
          yield* sql`UPDATE webhook_deliveries SET status = ${row.paused ? "held" : "pending"}, attempts = 0,
              next_attempt_at = '-infinity', lease_until = NULL, lease_token = NULL, completed_at = NULL
            WHERE id = ${deliveryId}`
          return { messageId: row.messageId, previous: row.status, queued: true }
        }))

      const resume = (endpointId: string) =>
        sql.withTransaction(Effect.gen(function*() {
          const [endpoint] = yield* sql<{ wasPaused: boolean }>`SELECT paused_at IS NOT NULL AS "wasPaused"
            FROM webhook_endpoints WHERE id = ${endpointId} FOR UPDATE`
          if (endpoint === undefined) return undefined
          yield* sql`UPDATE webhook_endpoints SET paused_at = NULL, consecutive_failures = 0, failing_since = NULL, stalled = false
            WHERE id = ${endpointId}`
          const released = yield* sql`UPDATE webhook_deliveries
            SET status = 'pending', attempts = 0, next_attempt_at = '-infinity'
            WHERE endpoint_id = ${endpointId} AND status = 'held'
            RETURNING 1`
          return { wasPaused: endpoint.wasPaused, released: released.length }
        }))

      // A new delivery's `next_attempt_at` is '-infinity' (due at once): it has been due since it was created.
      const queueState = sql<QueueState>`SELECT
          count(*) FILTER (WHERE status = 'pending' AND next_attempt_at <= now())::int AS due,
          count(*) FILTER (WHERE status = 'pending' AND next_attempt_at > now())::int AS scheduled,
          count(*) FILTER (WHERE status = 'held')::int AS held,
          COALESCE(extract(epoch FROM now() - min(greatest(next_attempt_at, created_at))
            FILTER (WHERE status = 'pending' AND next_attempt_at <= now())), 0)::float8 AS "oldestDueSeconds",
          (SELECT count(*) FROM webhook_endpoints WHERE paused_at IS NOT NULL)::int AS paused
        FROM webhook_deliveries WHERE status IN ('pending', 'held')`.pipe(Effect.map((rows) => rows[0]))

      return WebhookRepo.of({
        upsertEndpoint,
        deleteEndpointsExcept,
        enqueue,
        claim,
        complete,
        releaseLease,
        listFailed,
        redeliver,
        resume,
        notify: sql`SELECT pg_notify('hearken_webhooks', '')`.pipe(Effect.asVoid),
        queueState
      })
    })
  )
}
