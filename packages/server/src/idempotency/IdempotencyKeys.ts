import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import type { SqlFailure } from "../sql/SqlFailure.js"

/** How long a key is remembered (docs/api.md: "Retries: Idempotency-Key"). */
export const keyLifetimeMs = 24 * 60 * 60 * 1000

/** Expired rows removed per write, so that the table does not grow with keys nobody reuses. */
const purgeBatch = 100

export interface Remembered {
  readonly requestHash: string
  /** The first answer, as its JSON. */
  readonly response: unknown
}

/** A failed statement or an undecodable row: the caller maps it (`SqlFailure.orDie`). */
type Q<A> = Effect.Effect<A, SqlFailure>

const RememberedRow = Schema.Struct({ requestHash: Schema.String, response: Schema.Unknown })

/** The SQL of `idempotency_keys` (migration 0009). Every call runs in the caller's transaction. */
export class IdempotencyKeys extends Context.Service<IdempotencyKeys, {
  /**
   * Waits until no other transaction holds (organization, key), then holds it
   * until this transaction ends: concurrent requests with one key go one at a time.
   */
  readonly lock: (organizationId: string, key: string) => Q<void>
  /** The answer remembered for the key at `nowMs`, if any. */
  readonly find: (organizationId: string, key: string, nowMs: number) => Q<Remembered | undefined>
  /** Remembers a created post's answer, replacing an expired row; purges a few expired ones. */
  readonly remember: (organizationId: string, key: string, requestHash: string, response: unknown, nowMs: number) => Q<void>
}>()("hearken/IdempotencyKeys") {
  static readonly layer = Layer.effect(
    IdempotencyKeys,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const since = (nowMs: number) => new Date(nowMs - keyLifetimeMs).toISOString()

      const remembered = SqlSchema.findOneOption({
        Request: Schema.Struct({ organizationId: Schema.String, key: Schema.String, since: Schema.String }),
        Result: RememberedRow,
        execute: ({ key, organizationId, since }) =>
          sql`SELECT request_hash AS "requestHash", response
            FROM idempotency_keys
            WHERE organization_id = ${organizationId} AND key = ${key} AND created_at > ${since}::timestamptz`
      })

      return IdempotencyKeys.of({
        lock: (organizationId, key) => sql`SELECT pg_advisory_xact_lock(hashtext(${organizationId}), hashtext(${key}))`.pipe(Effect.asVoid),
        find: (organizationId, key, nowMs) =>
          remembered({ organizationId, key, since: since(nowMs) }).pipe(
            Effect.map(Option.match({
              onNone: () => undefined,
              onSome: (row) => ({ requestHash: row.requestHash, response: parse(row.response) })
            }))
          ),
        remember: (organizationId, key, requestHash, response, nowMs) =>
          Effect.all([
            sql`INSERT INTO idempotency_keys (organization_id, key, request_hash, response, created_at)
              VALUES (${organizationId}, ${key}, ${requestHash}, ${JSON.stringify(response)}::jsonb,
                ${new Date(nowMs).toISOString()}::timestamptz)
              ON CONFLICT (organization_id, key) DO UPDATE
              SET request_hash = EXCLUDED.request_hash, response = EXCLUDED.response, created_at = EXCLUDED.created_at`,
            sql`DELETE FROM idempotency_keys WHERE (organization_id, key) IN (
              SELECT organization_id, key FROM idempotency_keys
              WHERE created_at <= ${since(nowMs)}::timestamptz LIMIT ${purgeBatch})`
          ], { discard: true })
      })
    })
  )
}

/** jsonb comes back parsed from PostgreSQL and as text from some drivers. */
const parse = (value: unknown) => typeof value === "string" ? JSON.parse(value) as unknown : value
