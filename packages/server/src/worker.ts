import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Option } from "effect"
import { Worker } from "./App.js"
import { DatabaseConfig } from "./config/database.js"
import { InvalidConfig } from "./config/InvalidConfig.js"
import * as ServerConfig from "./config/ServerConfig.js"
import * as Logging from "./observability/Logging.js"
import { reportStartupFailure, teardown } from "./startup-failure.js"

/** The embedded database belongs to the server process, whose own worker runs by default. */
const requireDatabaseUrl = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* DatabaseConfig
  if (Option.isNone(config.databaseUrl)) {
    return yield* new InvalidConfig({ variable: "DATABASE_URL", reason: "must be set: a dedicated worker needs PostgreSQL" })
  }
}))

// A stop says `Draining: …` when it begins and `Stopped: …` once everything is released.
Layer.launch(Worker.pipe(Layer.provide(requireDatabaseUrl))).pipe(
  Logging.logStopped,
  Effect.provide(Logging.settings.pipe(Layer.provideMerge(ServerConfig.layer))),
  reportStartupFailure,
  NodeRuntime.runMain({ teardown })
)
