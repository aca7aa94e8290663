import { Context, Effect, Layer } from "effect"
import { ReadSql } from "../sql/ReadReplica.js"

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

/** The SQL of `organization_versions`, which triggers on `boards` and `updates` keep; read where the reads go (`ReadSql`). */
export class Versions extends Context.Service<Versions, {
  /** One indexed read of one small row; never the boards or updates themselves. */
  readonly read: (organizationId: string, nowMs: number) => Effect.Effect<Version>
}>()("hearken/Versions") {
  static readonly layer = Layer.effect(
    Versions,
    Effect.gen(function*() {
      const sql = (yield* ReadSql).client
      const read = Effect.fn("Versions.read")(function*(organizationId: string, nowMs: number) {
        const [row] = yield* sql<{ epoch: string; boards: string; updates: string; due: number }>`SELECT epoch,
            boards::text AS boards, updates::text AS updates,
            (SELECT count(*) FROM unnest(scheduled) AS s WHERE s <= ${new Date(nowMs).toISOString()}::timestamptz)::int AS due
          FROM organization_versions WHERE organization_id = ${organizationId}`
        if (row === undefined) return { ...none, due: 0 }
        return { epoch: row.epoch, boards: Number(row.boards), updates: Number(row.updates), due: row.due }
      }, Effect.orDie)
      return Versions.of({ read })
    })
  )
}
