import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Console, Effect, Layer, Option } from "effect"
import { Argument, CliError, Command, Flag } from "effect/cli"
import { Tooling } from "./App.js"
import { DatabaseConfig } from "./config/database.js"
import { InvalidConfig } from "./config/InvalidConfig.js"
import { redactUrl } from "./config/redaction.js"
import * as ServerConfig from "./config/ServerConfig.js"
import { reportStartupFailure } from "./startup-failure.js"
import { WebhookOperatorRepo } from "./webhooks/WebhookOperatorRepo.js"

/** `npm run webhooks -- failed | redeliver ID | resume ENDPOINT`: the operator's commands. */

const refuse = (message: string) => Console.error(message).pipe(Effect.andThen(Effect.sync(() => (process.exitCode = 1))))

const failed = Command.make("failed", {
  limit: Flag.Int("limit").pipe(Flag.withDescription("How many to list, newest first"), Flag.withDefault(100)),
  json: Flag.Boolean("json").pipe(Flag.withDescription("One JSON object per line"), Flag.withDefault(false))
}, Effect.fn(function*({ limit, json }) {
  const repo = yield* WebhookOperatorRepo
  const rows = yield* repo.listFailed(Math.max(1, limit)).pipe(Effect.orDie)
  if (json) {
    for (const row of rows) yield* Console.log(JSON.stringify({ ...row, url: redactUrl(row.url) }))
    return
  }
  if (rows.length === 0) return yield* Console.log("No failed deliveries.")
  for (const row of rows) {
    yield* Console.log(
      `${row.id}  ${row.failedAt}  endpoint ${row.endpointId} (${redactUrl(row.url)})  message ${row.messageId}  ` +
        `${row.attempts} attempt(s)  ${row.lastError ?? ""}` +
        (row.lastResponse ? `  answer: ${JSON.stringify(row.lastResponse.slice(0, 120))}` : "")
    )
  }
})).pipe(Command.withDescription("List failed webhook deliveries, newest first"))

const redeliver = Command.make("redeliver", {
  id: Argument.String("delivery-id").pipe(Argument.withDescription("A delivery id (whd_…), as `failed` lists it"))
}, Effect.fn(function*({ id }) {
  const repo = yield* WebhookOperatorRepo
  const result = yield* repo.redeliver(id).pipe(Effect.orDie)
  if (result === undefined) return yield* refuse(`No delivery ${id}.`)
  if (!result.queued) return yield* Console.log(`Delivery ${id} is ${result.previous} already; nothing to do.`)
  yield* repo.notify.pipe(Effect.ignore)
  yield* Console.log(`Queued ${id} again (was ${result.previous}); it keeps webhook-id ${result.messageId}.`)
})).pipe(Command.withDescription("Queue a failed (or delivered) delivery again, under the same webhook-id"))

const resume = Command.make("resume", {
  id: Argument.String("endpoint-id").pipe(Argument.withDescription("A webhook endpoint id, as in the fixture"))
}, Effect.fn(function*({ id }) {
  const repo = yield* WebhookOperatorRepo
  const result = yield* repo.resume(id).pipe(Effect.orDie)
  if (result === undefined) return yield* refuse(`No webhook endpoint ${id}.`)
  yield* repo.notify.pipe(Effect.ignore)
  yield* Console.log(
    result.wasPaused
      ? `Resumed ${id}; ${result.released} held deliver${result.released === 1 ? "y is" : "ies are"} due now.`
      : `Endpoint ${id} was not paused; its failure count is reset.`
  )
})).pipe(Command.withDescription("Resume a paused webhook endpoint; its held deliveries go out at once"))

const webhooks = Command.make("webhooks").pipe(
  Command.withDescription("Operate webhook delivery"),
  Command.withSubcommands([failed, redeliver, resume])
)

/** An in-memory embedded database is new and empty in every process: there is nothing to operate on. */
const requireStoredDatabase = Effect.gen(function*() {
  const config = yield* DatabaseConfig
  if (Option.isNone(config.databaseUrl) && config.pgliteDir === "memory") {
    return yield* new InvalidConfig({ variable: "PGLITE_DIR", reason: "is memory: set DATABASE_URL, or the PGLITE_DIR the server uses (stopped)" })
  }
})

requireStoredDatabase.pipe(
  Effect.andThen(Command.run(webhooks, { version: "1.0.0" })),
  // Usage errors were already printed with the help text.
  Effect.catchIf(CliError.isCliError, () => Effect.sync(() => (process.exitCode = 2))),
  Effect.provide(Tooling),
  Effect.provide(Layer.mergeAll(ServerConfig.layer, NodeServices.layer)),
  reportStartupFailure,
  NodeRuntime.runMain
)
