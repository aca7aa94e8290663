import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect, Layer } from "effect"
import { HttpConfig } from "./config/http.js"
import * as ServerConfig from "./config/ServerConfig.js"
import * as Logging from "./observability/Logging.js"
import { reportStartupFailure, teardown } from "./startup-failure.js"

/** The configuration is read before the rest of the server loads (its modules take seconds): a bad variable is told at once. */
const Server = Layer.unwrap(Effect.gen(function*() {
  yield* HttpConfig
  const { App } = yield* Effect.promise(() => import("./App.js"))
  return App
}))

// The last line, `Stopped: …`, comes once everything is released (docs/operations.md: "Logs").
Layer.launch(Server).pipe(
  Logging.logStopped,
  Effect.provide(Logging.settings.pipe(Layer.provideMerge(ServerConfig.layer))),
  reportStartupFailure,
  NodeRuntime.runMain({ teardown })
)
