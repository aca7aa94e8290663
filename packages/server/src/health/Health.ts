import { HearkenApi, InternalServerError } from "@hearken/api/effect"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { SqlClient } from "effect/sql"

/** Answered with status 503 (`DatabaseUnavailable` in the API); the tag is the spec's. */
const unavailable = new InternalServerError({ message: "database unreachable" })

/** `GET /health`: the database answers a trivial query within two seconds. Redis plays no part. */
export const layer = HttpApiBuilder.group(
  HearkenApi,
  "system",
  Effect.fn(function*(handlers) {
    const sql = yield* SqlClient.SqlClient
    return handlers.handleAll({
      health: () =>
        sql`SELECT 1`.pipe(
          Effect.timeout("2 seconds"),
          Effect.as({ status: "ok" as const }),
          Effect.catchCause(() => Effect.fail(unavailable))
        )
    })
  })
)
