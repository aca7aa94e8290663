import { NodeRuntime } from "@effect/platform-node"
import { Layer } from "effect"
import { App } from "./App.js"
import { ServerConfig } from "./config.js"
import { reportStartupFailure, teardown } from "./startup-failure.js"

Layer.launch(App.pipe(Layer.provide(ServerConfig.layer))).pipe(reportStartupFailure, NodeRuntime.runMain({ teardown }))
