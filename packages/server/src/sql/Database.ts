import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option, Schedule } from "effect"
import { Migrator } from "effect/sql"
import { ServerConfig } from "../config.js"
import { startEmbedded } from "./Embedded.js"
import { loader } from "./migrations/index.js"

const runMigrations = Migrator.make({})({ loader })

/** Runs the migrations; a concurrent first start of another instance may collide once, so retry. */
export const migrate = runMigrations.pipe(
  Effect.retry({ times: 3, schedule: Schedule.spaced("200 millis") })
)

/**
 * The PostgreSQL client: `DATABASE_URL` when set, else the embedded PGlite
 * (one connection: PGlite serves exactly one), migrated before use.
 */
export const layer = Layer.unwrap(
  Effect.gen(function*() {
    const config = yield* ServerConfig
    if (Option.isSome(config.databaseUrl)) {
      return PgClient.layer({ url: config.databaseUrl.value, maxConnections: 10, connectTimeout: "5 seconds" })
    }
    return Layer.unwrap(
      Effect.map(startEmbedded(config.pgliteDir), (port) =>
        PgClient.layer({
          host: "127.0.0.1",
          port,
          username: "postgres",
          database: "postgres",
          ssl: false,
          maxConnections: 1
        }))
    )
  })
).pipe(Layer.tap((context) => Effect.provide(migrate, context)))
