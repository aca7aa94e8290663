import { Effect, Schema } from "effect"

/**
 * Rows that do not decode mean the SQL and its schema disagree: a defect, not an error a caller
 * could handle. The repositories' errors stay what their statements fail with (`SqlError`).
 */
export const decoded = <A, E, R>(self: Effect.Effect<A, E | Schema.SchemaError, R>): Effect.Effect<A, E, R> =>
  Effect.catch(self, (error) => Schema.isSchemaError(error) ? Effect.die(error) : Effect.fail(error))
