import { InternalServerError } from "@hearken/api"
import { Effect, Layer, Option } from "effect"
import { PrometheusMetrics } from "effect/observability"
import { createServer } from "node:http"
import { InvalidConfig, ServerConfig } from "../config.js"
import * as ErrorBodies from "../http/ErrorBodies.js"
import { Gauges } from "./Gauges.js"
import { zeroes } from "./Metrics.js"

const jsonNotFound = ErrorBodies.json(ErrorBodies.routeNotFound)
const jsonUnreadable = ErrorBodies.json(ErrorBodies.bodyOf(new InternalServerError({ message: "metrics: could not be formatted" })))

/**
 * `GET /metrics` on `METRICS_PORT` (at `METRICS_HOST`), a listener of its
 * own (decision 0014): never on the public port. A scrape reads the gauges
 * first; if the database does not answer, the counters are still served.
 */
const listener = (port: number, host: string) =>
  Effect.gen(function*() {
    const context = yield* Effect.context<never>()
    const gauges = yield* Gauges
    const scrape = gauges.read.pipe(
      Effect.timeout("2 seconds"),
      Effect.catchCause((cause) => Effect.logWarning("Metrics: could not read the database gauges", cause)),
      Effect.andThen(PrometheusMetrics.format()),
      Effect.provide(context)
    )
    const server = createServer((req, res) => {
      if (req.method !== "GET" || req.url?.split("?", 1)[0] !== "/metrics") {
        res.writeHead(404, { "content-type": "application/json" }).end(jsonNotFound)
        return
      }
      Effect.runPromise(scrape).then(
        (body) => res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" }).end(body),
        () => res.writeHead(500, { "content-type": "application/json" }).end(jsonUnreadable)
      )
    })
    yield* Effect.acquireRelease(
      Effect.callback<void, InvalidConfig>((resume) => {
        server.once("error", (error: NodeJS.ErrnoException) =>
          resume(Effect.fail(
            new InvalidConfig({
              variable: "METRICS_PORT",
              reason: `cannot be listened on at ${host}:${port}: ${error.code === "EADDRINUSE" ? "the address is in use" : error.message}`
            })
          )))
        server.listen(port, host, () => resume(Effect.void))
      }),
      () => Effect.callback<void>((resume) => {
        server.close(() => resume(Effect.void))
        server.closeAllConnections()
      })
    )
    yield* Effect.logDebug(`Metrics on http://${host}:${port}/metrics`)
  })

/**
 * With `METRICS_PORT`: every labelled series at 0, then the listener;
 * without it, nothing. In the server and in `npm run worker`.
 */
export const layer = Layer.unwrap(Effect.gen(function*() {
  const config = yield* ServerConfig
  if (Option.isNone(config.metricsPort)) return Layer.empty
  return Layer.effectDiscard(Effect.andThen(zeroes, listener(config.metricsPort.value, config.metricsHost))).pipe(
    Layer.provide(Gauges.layer)
  )
}))
