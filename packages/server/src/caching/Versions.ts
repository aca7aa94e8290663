import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlSchema } from "effect/sql"
import { ReadSql } from "../sql/ReadReplica.js"
import { orDie } from "../sql/SqlFailure.js"

/** Where an organization's public answers stand (decision 0010). */
export interface Version {
  /** New whenever the organization's row is: counters never repeat an old tag. */
  readonly epoch: string
  readonly boards: number
  readonly updates: number
  /** Changelog entries scheduled when last written that are due by now. */
  readonly due: number
}

/** An organization nothing was ever written for: it has no boards and no changelog. */
const none: Omit<Version, "due"> = { epoch: "none", boards: 0, updates: 0 }

/** The counters as text: `bigint`s, which the driver gives as strings. */
const VersionRow = Schema.Struct({ epoch: Schema.String, boards: Schema.String, updates: Schema.String, due: Schema.Number })

/** The SQL of `organization_versions`, which triggers on `boards` and `updates` keep; read where the reads go (`ReadSql`). */
export class Versions extends Context.Service<Versions, {
  /** One indexed read of one small row; never the boards or updates themselves. */
  readonly read: (organizationId: string, nowMs: number) => Effect.Effect<Version>
}>()("hearken/Versions") {
  static readonly layer = Layer.effect(
    Versions,
    Effect.gen(function*() {
      const sql = (yield* ReadSql).client
      const versionOf = SqlSchema.findOneOption({
        Request: Schema.Struct({ organizationId: Schema.String, now: Schema.String }),
        Result: VersionRow,
        execute: ({ now, organizationId }) =>
          sql`SELECT epoch,
              boards::text AS boards, updates::text AS updates,
              (SELECT count(*) FROM unnest(scheduled) AS s WHERE s <= ${now}::timestamptz)::int AS due
            FROM organization_versions WHERE organization_id = ${organizationId}`
      })
      const read = Effect.fn("Versions.read")(function*(organizationId: string, nowMs: number) {
        const found = yield* versionOf({ organizationId, now: new Date(nowMs).toISOString() })
        if (Option.isNone(found)) return { ...none, due: 0 }
        const row = found.value
        return { epoch: row.epoch, boards: Number(row.boards), updates: Number(row.updates), due: row.due }
      }, orDie)
      return Versions.of({ read })
    })
  )
}
