import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, type SqlError, SqlSchema } from "effect/sql"
import { iso } from "../sql/iso.js"
import { decoded } from "./decoded.js"

/** A delivery a worker holds under a lease, with what it needs to send it. */
export const ClaimedDelivery = Schema.Struct({
  id: Schema.String,
  /** This attempt's number: attempts are counted when claimed, so one a worker died in counts too. */
  attempts: Schema.Number,
  leaseToken: Schema.String,
  /** The `webhook-id`. */
  messageId: Schema.String,
  body: Schema.String,
  endpointId: Schema.String,
  organizationId: Schema.String,
  /** The endpoint's last recorded attempt had stalled when this was claimed: it is in the stalled lane. */
  stalled: Schema.Boolean,
  url: Schema.String,
  secret: Schema.String,
  /** Secrets it still signs with during a rotation (fixture `previousSecrets`). */
  previousSecrets: Schema.Array(Schema.String),
  /** The W3C `traceparent` of the request that created the event, when it was traced. */
  traceparent: Schema.NullOr(Schema.String)
})
export type ClaimedDelivery = typeof ClaimedDelivery.Type

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
const QueueState = Schema.Struct({
  /** Pending deliveries due now. */
  due: Schema.Number,
  /** Pending deliveries waiting for a retry later. */
  scheduled: Schema.Number,
  /** Deliveries held while their endpoint is paused. */
  held: Schema.Number,
  /** How long the oldest due delivery has been waiting; 0 when none is due. */
  oldestDueSeconds: Schema.Number,
  /** Endpoints paused after repeated failures. */
  paused: Schema.Number
})
export type QueueState = typeof QueueState.Type

/** The claim statement's parameters, computed from a `Claim`. */
const ClaimParams = Schema.Struct({
  now: Schema.String,
  leaseUntil: Schema.String,
  token: Schema.String,
  limit: Schema.Number,
  stalledRoom: Schema.Number,
  lookahead: Schema.Number,
  perEndpoint: Schema.Number,
  perStalledEndpoint: Schema.Number,
  perOrganization: Schema.Number,
  /** The load as JSON objects: attempts by endpoint and by organization, late endpoints. */
  byEndpoint: Schema.String,
  byOrganization: Schema.String,
  late: Schema.String
})

const Ids = Schema.NullOr(Schema.Array(Schema.String))
/** Rows that said "ready" with nothing behind them that can be claimed now, on every row of a claim. */
const early = { earlyEndpoints: Ids, earlyOrganizations: Ids }
/** A claim's rows: one per delivery leased, or a single one without a delivery when it leased none. */
const ClaimRow = Schema.Union([
  Schema.Struct({ ...ClaimedDelivery.fields, ...early }),
  Schema.Struct({ id: Schema.Null, ...early })
])

/** The statement's parameters of one attempt's outcome. */
const CompletionParams = Schema.Struct({
  id: Schema.String,
  leaseToken: Schema.String,
  endpointId: Schema.String,
  status: Schema.Literals(["pending", "succeeded", "failed"]),
  now: Schema.String,
  nextAttemptAt: Schema.NullOr(Schema.String),
  completedAt: Schema.NullOr(Schema.String),
  httpStatus: Schema.NullOr(Schema.Number),
  error: Schema.NullOr(Schema.String),
  response: Schema.NullOr(Schema.String),
  failed: Schema.Boolean,
  stalled: Schema.Boolean,
  failures: Schema.Number,
  /** A streak that began at or before this time may pause the endpoint. */
  pauseIfFailingSince: Schema.String
})

type Q<A> = Effect.Effect<A, SqlError.SqlError>

/** The delivery queue the workers run: leases, attempts' outcomes, and its state for the gauges. */
export class DeliveryQueue extends Context.Service<DeliveryQueue, {
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
  /** The queue's depth and age and the paused endpoints, in one statement. */
  readonly queueState: Q<QueueState | undefined>
}>()("hearken/DeliveryQueue") {
  static readonly layer = Layer.effect(
    DeliveryQueue,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      // One claim statement: turns by organization, then by endpoint within it (decision 0026).
      // The queue tables say which organizations and endpoints have a delivery that can be claimed
      // now, in turn order (served longest ago first), so the claim reads what it may take and
      // little else, however many endpoints have work. Each organization is allotted an even part
      // of the slots (within what it has left of its cap), each of its endpoints an even part of
      // that, read from the front of the endpoint's own queue. Then every organization's first
      // delivery, then every second…; the stalled lane only up to what it has left of its slots.
      // Only the rows taken are locked, skipping those a concurrent claim holds. Yields what it
      // leased, and whether it found early rows (which it settles before it yields).
      const claimStatement = SqlSchema.findAll({
        Request: ClaimParams,
        Result: ClaimRow,
        execute: (p) =>
          sql`WITH orgs AS (
            SELECT o.organization_id, o.stalled, o.turn,
              LEAST(
                ${p.perOrganization} - COALESCE((${p.byOrganization}::jsonb ->> o.organization_id)::int, 0),
                ceil((CASE WHEN o.stalled THEN ${p.stalledRoom} ELSE ${p.limit} END)::numeric / count(*) OVER (PARTITION BY o.stalled))
              )::int AS share
            FROM (
              (SELECT organization_id, stalled, turn FROM webhook_organization_queues
                WHERE NOT stalled AND turn <= ${p.now}::timestamptz
                  AND COALESCE((${p.byOrganization}::jsonb ->> organization_id)::int, 0) < ${p.perOrganization}
                ORDER BY turn, organization_id LIMIT ${p.limit + p.lookahead})
              UNION ALL
              (SELECT organization_id, stalled, turn FROM webhook_organization_queues
                WHERE stalled AND turn <= ${p.now}::timestamptz AND ${p.stalledRoom} > 0
                  AND COALESCE((${p.byOrganization}::jsonb ->> organization_id)::int, 0) < ${p.perOrganization}
                ORDER BY turn, organization_id LIMIT ${p.stalledRoom + p.lookahead})
            ) o
          ), endpoints AS (
            SELECT o.organization_id, o.stalled, o.turn AS org_turn, q.endpoint_id, q.turn, o.share AS org_share, q.room,
              count(*) OVER (PARTITION BY o.organization_id, o.stalled) AS n
            FROM orgs o CROSS JOIN LATERAL (
              SELECT q.endpoint_id, q.turn,
                (CASE WHEN q.stalled THEN ${p.perStalledEndpoint} ELSE ${p.perEndpoint} END)
                  - COALESCE((${p.byEndpoint}::jsonb ->> q.endpoint_id)::int, 0) AS room
              FROM webhook_endpoint_queues q
              WHERE q.organization_id = o.organization_id AND q.stalled = o.stalled AND q.turn <= ${p.now}::timestamptz
                AND (${p.late}::jsonb -> q.endpoint_id) IS NULL
                AND COALESCE((${p.byEndpoint}::jsonb ->> q.endpoint_id)::int, 0)
                  < CASE WHEN q.stalled THEN ${p.perStalledEndpoint} ELSE ${p.perEndpoint} END
              ORDER BY q.turn, q.endpoint_id
              LIMIT o.share
            ) q
            WHERE o.share > 0
          ), candidates AS (
            SELECT e.organization_id, e.stalled, e.org_turn, e.turn AS endpoint_turn, e.endpoint_id, head.id,
              row_number() OVER (PARTITION BY e.endpoint_id ORDER BY head.next_attempt_at, head.id) AS round
            FROM endpoints e CROSS JOIN LATERAL (
              SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
              WHERE d.endpoint_id = e.endpoint_id AND d.status = 'pending' AND d.next_attempt_at <= ${p.now}::timestamptz
                AND (d.lease_until IS NULL OR d.lease_until <= ${p.now}::timestamptz)
              ORDER BY d.next_attempt_at, d.id
              LIMIT LEAST(e.room, ceil(e.org_share::numeric / e.n))::int
            ) head
          ), turns AS (
            SELECT c.*, row_number() OVER (PARTITION BY c.organization_id ORDER BY c.round, c.endpoint_turn, c.endpoint_id) AS org_round
            FROM candidates c
          ), allowed AS (
            SELECT t.*, row_number() OVER (PARTITION BY t.stalled ORDER BY t.org_round, t.org_turn, t.organization_id) AS lane_rank
            FROM turns t
            WHERE t.org_round <= ${p.perOrganization} - COALESCE((${p.byOrganization}::jsonb ->> t.organization_id)::int, 0)
          ), due AS (
            SELECT d.id FROM allowed a JOIN webhook_deliveries d ON d.id = a.id
            WHERE (NOT a.stalled OR a.lane_rank <= ${p.stalledRoom})
              AND d.status = 'pending' AND d.next_attempt_at <= ${p.now}::timestamptz
              AND (d.lease_until IS NULL OR d.lease_until <= ${p.now}::timestamptz)
            ORDER BY a.org_round, a.org_turn, a.organization_id
            LIMIT ${p.limit}
            FOR UPDATE OF d SKIP LOCKED
          ), leased AS (
            UPDATE webhook_deliveries d
            SET lease_until = ${p.leaseUntil}::timestamptz, lease_token = ${p.token}, attempts = d.attempts + 1,
              leased_at = ${p.now}::timestamptz
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
                    WHERE q.organization_id = o.organization_id AND q.stalled = o.stalled AND q.turn <= ${p.now}::timestamptz
                  )) AS organizations
          )
          SELECT leased.*, early.endpoints AS "earlyEndpoints", early.organizations AS "earlyOrganizations"
          FROM early LEFT JOIN leased ON true`
      })

      // Settled apart from the claim, so that its locks come in the one order every settle takes.
      const settle = SqlSchema.void({
        Request: Schema.Struct({ endpoints: Schema.Array(Schema.String), organizations: Schema.Array(Schema.String) }),
        execute: ({ endpoints, organizations }) =>
          sql`SELECT hearken_webhook_settle(
              ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(endpoints)}::jsonb)),
              ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(organizations)}::jsonb)))`
      })

      const claimOnce = (c: Claim) => {
        const { limits, load } = c
        const stalledRoom = Math.max(0, Math.min(limits.stalledSlots - load.stalled, c.limit))
        return claimStatement({
          now: iso(c.nowMs),
          leaseUntil: iso(c.nowMs + c.leaseMs),
          token: c.token,
          limit: c.limit,
          stalledRoom,
          // Organizations with something in flight may offer nothing (their endpoints are at their
          // caps or late): look that many further.
          lookahead: load.organizations.size,
          perEndpoint: limits.perEndpoint,
          perStalledEndpoint: limits.perStalledEndpoint,
          perOrganization: limits.perOrganization,
          byEndpoint: JSON.stringify(Object.fromEntries(load.endpoints)),
          byOrganization: JSON.stringify(Object.fromEntries(load.organizations)),
          late: JSON.stringify(Object.fromEntries([...load.late].map((id) => [id, true])))
        }).pipe(
          Effect.flatMap((rows) => {
            const endpoints = rows[0]?.earlyEndpoints ?? []
            const organizations = rows[0]?.earlyOrganizations ?? []
            const leased = rows.flatMap((row): Array<ClaimedDelivery> => {
              if (row.id === null) return []
              const { earlyEndpoints: _, earlyOrganizations: __, ...delivery } = row
              return [delivery]
            })
            if (endpoints.length === 0 && organizations.length === 0) return Effect.succeed({ leased, early: false })
            return settle({ endpoints, organizations }).pipe(Effect.as({ leased, early: true }))
          }),
          decoded
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

      // The endpoint's old row is read under its lock, so concurrent outcomes count exactly and
      // exactly one of them sees the pause happen. A success locks nothing unless there is a
      // streak to end or a stalled lane to leave.
      const completeStatement = SqlSchema.findOneOption({
        Request: CompletionParams,
        Result: Schema.Struct({ consecutiveFailures: Schema.NullOr(Schema.Number), newlyPaused: Schema.NullOr(Schema.Boolean) }),
        execute: (p) =>
          sql`WITH done AS (
            UPDATE webhook_deliveries SET
              status = ${p.status},
              next_attempt_at = COALESCE(${p.nextAttemptAt}::timestamptz, next_attempt_at),
              lease_until = NULL,
              lease_token = NULL,
              last_attempt_at = ${p.now}::timestamptz,
              last_status = ${p.httpStatus},
              last_error = ${p.error},
              last_response = ${p.response},
              completed_at = ${p.completedAt}::timestamptz
            WHERE id = ${p.id} AND lease_token = ${p.leaseToken}
            RETURNING id
          ), old AS (
            SELECT id, consecutive_failures, failing_since, paused_at FROM webhook_endpoints
            WHERE id = ${p.endpointId} AND EXISTS (SELECT 1 FROM done)
              AND (${p.failed} OR consecutive_failures > 0 OR stalled)
            FOR UPDATE
          ), streak AS (
            UPDATE webhook_endpoints e SET
              consecutive_failures = CASE WHEN ${p.failed} THEN old.consecutive_failures + 1 ELSE 0 END,
              stalled = ${p.stalled},
              failing_since = CASE WHEN ${p.failed} THEN COALESCE(old.failing_since, ${p.now}::timestamptz) END,
              paused_at = CASE
                WHEN ${p.failed} AND old.paused_at IS NULL AND old.consecutive_failures + 1 >= ${p.failures}
                  AND COALESCE(old.failing_since, ${p.now}::timestamptz) <= ${p.pauseIfFailingSince}::timestamptz
                THEN ${p.now}::timestamptz ELSE old.paused_at END
            FROM old WHERE e.id = old.id
            RETURNING e.consecutive_failures, (old.paused_at IS NULL AND e.paused_at IS NOT NULL) AS newly_paused
          ), held AS (
            UPDATE webhook_deliveries SET status = 'held'
            WHERE endpoint_id = ${p.endpointId} AND status = 'pending' AND lease_token IS NULL
              AND id <> ${p.id} AND EXISTS (SELECT 1 FROM streak WHERE newly_paused)
          )
          SELECT streak.consecutive_failures AS "consecutiveFailures", streak.newly_paused AS "newlyPaused"
          FROM done LEFT JOIN streak ON true`
      })

      const complete = (delivery: ClaimedDelivery, c: Completion, policy: PausePolicy): Q<Recorded> => {
        const now = iso(c.nowMs)
        const failed = c.status !== "succeeded"
        return completeStatement({
          id: delivery.id,
          leaseToken: delivery.leaseToken,
          endpointId: delivery.endpointId,
          status: c.status,
          now,
          nextAttemptAt: c.nextAttemptMs === undefined ? null : iso(c.nextAttemptMs),
          completedAt: c.status === "pending" ? null : now,
          httpStatus: c.httpStatus,
          error: c.error,
          response: c.response,
          failed,
          stalled: failed && c.stalled,
          failures: policy.failures,
          pauseIfFailingSince: iso(c.nowMs - policy.stretchMs)
        }).pipe(
          Effect.map((found) =>
            Option.match(found, {
              onNone: (): Recorded => ({ recorded: false, consecutiveFailures: 0, newlyPaused: false }),
              onSome: (row): Recorded => ({ recorded: true, consecutiveFailures: row.consecutiveFailures ?? 0, newlyPaused: row.newlyPaused === true })
            })
          ),
          decoded
        )
      }

      const releaseLease = SqlSchema.void({
        Request: Schema.Struct({ id: Schema.String, leaseToken: Schema.String }),
        execute: ({ id, leaseToken }) =>
          sql`UPDATE webhook_deliveries SET lease_until = NULL, lease_token = NULL
            WHERE id = ${id} AND lease_token = ${leaseToken}`
      })

      // A new delivery's `next_attempt_at` is '-infinity' (due at once): it has been due since it was created.
      const queueState = SqlSchema.findOneOption({
        Request: Schema.Void,
        Result: QueueState,
        execute: () =>
          sql`SELECT
          count(*) FILTER (WHERE status = 'pending' AND next_attempt_at <= now())::int AS due,
          count(*) FILTER (WHERE status = 'pending' AND next_attempt_at > now())::int AS scheduled,
          count(*) FILTER (WHERE status = 'held')::int AS held,
          COALESCE(extract(epoch FROM now() - min(greatest(next_attempt_at, created_at))
            FILTER (WHERE status = 'pending' AND next_attempt_at <= now())), 0)::float8 AS "oldestDueSeconds",
          (SELECT count(*) FROM webhook_endpoints WHERE paused_at IS NOT NULL)::int AS paused
        FROM webhook_deliveries WHERE status IN ('pending', 'held')`
      })

      return DeliveryQueue.of({
        claim,
        complete,
        releaseLease: (delivery) => releaseLease({ id: delivery.id, leaseToken: delivery.leaseToken }).pipe(decoded),
        queueState: queueState(undefined).pipe(Effect.map(Option.getOrUndefined), decoded)
      })
    })
  )
}
