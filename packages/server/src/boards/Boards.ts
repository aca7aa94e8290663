import { Board } from "@hearken/api/effect"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { ReadSql } from "../sql/ReadReplica.js"
import { orDie } from "../sql/SqlFailure.js"

const BoardRef = Schema.Struct({ id: Schema.String, visibility: Schema.Literals(["public", "private"]) })
export type BoardRef = typeof BoardRef.Type

export class Boards extends Context.Service<Boards, {
  readonly listPublic: (organizationId: string) => Effect.Effect<ReadonlyArray<Board>>
  readonly find: (organizationId: string, boardId: string) => Effect.Effect<Option.Option<BoardRef>>
}>()("hearken/Boards") {
  static readonly layer = Layer.effect(
    Boards,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      // The public list is a read (`ReadSql`); `find` is what a new post checks, on the primary.
      const reads = (yield* ReadSql).client

      const listPublic = SqlSchema.findAll({
        Request: Schema.String,
        Result: Board,
        execute: (organizationId) =>
          reads`SELECT id, name, slug, organization_id AS "organizationId",
                     iso_ms(created_at) AS "createdAt", iso_ms(updated_at) AS "updatedAt"
              FROM boards
              WHERE organization_id = ${organizationId} AND visibility = 'public'
              ORDER BY created_at, id`
      })

      const find = SqlSchema.findOneOption({
        Request: Schema.Struct({ organizationId: Schema.String, boardId: Schema.String }),
        Result: BoardRef,
        execute: ({ boardId, organizationId }) =>
          sql`SELECT id, visibility FROM boards WHERE id = ${boardId} AND organization_id = ${organizationId}`
      })

      return Boards.of({
        listPublic: Effect.fn("Boards.listPublic")((organizationId: string) => listPublic(organizationId).pipe(orDie)),
        find: Effect.fn("Boards.find")((organizationId: string, boardId: string) =>
          find({ organizationId, boardId }).pipe(orDie)
        )
      })
    })
  )
}
