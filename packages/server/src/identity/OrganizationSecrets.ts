import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { orDie } from "../sql/SqlFailure.js"

const Secret = Schema.Struct({ secret: Schema.String })

/** The SQL of `organization_jwt_secrets`: the secrets an organization's identity tokens may be signed with. */
export class OrganizationSecrets extends Context.Service<OrganizationSecrets, {
  /** The organization's secrets, in rotation order. */
  readonly list: (organizationId: string) => Effect.Effect<ReadonlyArray<string>>
  /**
   * Replaces the organization's secrets with `secrets` (in that order) and yields the ones it had:
   * a secret left out is no longer accepted. Runs inside the caller's transaction (fixture import).
   */
  readonly replace: (organizationId: string, secrets: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<string>>
}>()("hearken/OrganizationSecrets") {
  static readonly layer = Layer.effect(
    OrganizationSecrets,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const list = SqlSchema.findAll({
        Request: Schema.String,
        Result: Secret,
        execute: (organizationId) =>
          sql`SELECT secret FROM organization_jwt_secrets
            WHERE organization_id = ${organizationId} ORDER BY position`
      })

      const removeAll = SqlSchema.findAll({
        Request: Schema.String,
        Result: Secret,
        execute: (organizationId) =>
          sql`DELETE FROM organization_jwt_secrets
            WHERE organization_id = ${organizationId} RETURNING secret`
      })

      const insert = SqlSchema.void({
        Request: Schema.Struct({ organizationId: Schema.String, position: Schema.Number, secret: Schema.String }),
        execute: ({ organizationId, position, secret }) =>
          sql`INSERT INTO organization_jwt_secrets (organization_id, position, secret)
            VALUES (${organizationId}, ${position}, ${secret})`
      })

      return OrganizationSecrets.of({
        list: Effect.fn("OrganizationSecrets.list")((organizationId: string) =>
          list(organizationId).pipe(Effect.map((rows) => rows.map((row) => row.secret)), orDie)
        ),
        replace: Effect.fn("OrganizationSecrets.replace")(function*(organizationId: string, secrets: ReadonlyArray<string>) {
          const before = (yield* removeAll(organizationId)).map((row) => row.secret)
          for (const [position, secret] of secrets.entries()) yield* insert({ organizationId, position, secret })
          return before
        }, orDie)
      })
    })
  )
}
