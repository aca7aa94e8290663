import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Option } from "effect"
import { Worker } from "./App.js"
import { InvalidConfig, ServerConfig } from "./config.js"
import { reportStartupFailure, teardown } from "./startup-failure.js"

/** The embedded database belongs to the server process, whose own worker runs by default. */
const requireDatabaseUrl = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* ServerConfig
  if (Option.isNone(config.databaseUrl)) {
    return yield* new InvalidConfig({ variable: "DATABASE_URL", reason: "must be set: a dedicated worker needs PostgreSQL" })
  }
}))

Layer.launch(Worker.pipe(Layer.provide(requireDatabaseUrl), Layer.provideMerge(ServerConfig.layer))).pipe(
  reportStartupFailure,
  NodeRuntime.runMain({ teardown })
)
