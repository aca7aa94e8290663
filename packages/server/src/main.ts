import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect, Layer } from "effect"
import { ServerConfig } from "./config.js"
import { reportStartupFailure, teardown } from "./startup-failure.js"

/** The configuration is read before the rest of the server loads (its modules take seconds): a bad variable is told at once. */
const Server = Layer.unwrap(Effect.gen(function*() {
  yield* ServerConfig
  const { App } = yield* Effect.promise(() => import("./App.js"))
  return App
}))

Layer.launch(Server.pipe(Layer.provide(ServerConfig.layer))).pipe(reportStartupFailure, NodeRuntime.runMain({ teardown }))
