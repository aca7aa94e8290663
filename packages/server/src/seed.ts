import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, ConfigProvider } from "effect"
import { Core } from "./App.js"
import * as ServerConfig from "./config/ServerConfig.js"
import { reportStartupFailure } from "./startup-failure.js"

/** `npm run seed -- FILE.json`: migrate, import FILE, exit. */
const file = process.argv[2]
if (file === undefined) {
  process.stderr.write("usage: npm run seed -- FILE.json\n")
  process.exit(2)
}

const env = { ...process.env, SEED_FILE: file }

Layer.build(Core).pipe(
  Effect.scoped,
  Effect.provide(ServerConfig.layer),
  Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env }))),
  Effect.andThen(Effect.sync(() => process.stdout.write(`imported ${file}\n`))),
  reportStartupFailure,
  NodeRuntime.runMain
)
