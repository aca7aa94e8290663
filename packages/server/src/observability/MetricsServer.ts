import { NodeHttpServer } from "@effect/platform-node"
import { InternalServerError } from "@hearken/api/effect"
import { Effect, Layer, Option } from "effect"
import { HttpMiddleware, HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { PrometheusMetrics } from "effect/observability"
import { createServer, type Server } from "node:http"
import { InvalidConfig } from "../config/InvalidConfig.js"
import { ObservabilityConfig } from "../config/observability.js"
import * as ErrorBodies from "../edge/ErrorBodies.js"
import { Gauges } from "./Gauges.js"
import * as ProcessGauges from "./ProcessGauges.js"
import { zeroes } from "./Metrics.js"

/**
 * `GET /metrics` on `METRICS_PORT` (at `METRICS_HOST`), an HTTP server of
 * its own (decision 0014): never on the public port. Anything else is the
 * bare JSON 404 of an unknown route.
 */

const contentType = "text/plain; version=0.0.4; charset=utf-8"
const notFound = HttpServerResponse.jsonUnsafe(ErrorBodies.routeNotFound, { status: 404 })
const unreadable = ErrorBodies.respond(new InternalServerError({ message: "metrics: could not be formatted" }))

/**
 * `GET /metrics` as sent, with a query string or without: the router also
 * takes HEAD for GET, and `/METRICS`, `/metrics/`, `//metrics`, `/metric%73`
 * or `/metrics;x` for the path, which this listener has always answered with
 * the 404.
 */
const servesExactly = (request: HttpServerRequest.HttpServerRequest) =>
  request.method === "GET" && request.url.split("?", 1)[0] === "/metrics"

/** The socket, closed at once on shutdown, connections and all: nothing here is worth waiting for. */
const closeNow = (node: Server) =>
  Effect.callback<void>((resume) => {
    node.close(() => resume(Effect.void))
    node.closeAllConnections()
  })

const listen = (port: number, host: string) =>
  Effect.gen(function*() {
    const gauges = yield* Gauges
    const processGauges = yield* ProcessGauges.make
    // The gauges first, for 2 s at most; if the database does not answer, the counters are still served.
    const scrape = gauges.read.pipe(
      Effect.timeout("2 seconds"),
      Effect.catchCause((cause) => Effect.logWarning("Metrics: could not read the database gauges", cause)),
      Effect.andThen(processGauges),
      Effect.andThen(PrometheusMetrics.format()),
      Effect.map((body) => HttpServerResponse.text(body, { contentType })),
      Effect.catchCause(() => Effect.succeed(unreadable))
    )
    // A router of its own: `HttpRouter.layer` is memoized, and in the server it is the public port's.
    const router = yield* HttpRouter.make
    yield* router.add("GET", "/metrics", (request) => servesExactly(request) ? scrape : Effect.succeed(notFound))
    const app = Effect.catchCause(
      router.asHttpEffect(),
      (cause) => ErrorBodies.isRouteNotFound(cause) ? Effect.succeed(notFound) : Effect.failCause(cause)
    )

    // No upgrades (the platform listens for them): a request with `Upgrade` stays an ordinary one.
    const node = createServer({ shouldUpgradeCallback: () => false })
    const server = yield* NodeHttpServer.make(() => node, { port, host }).pipe(
      Effect.catchTag("ServeError", (error) => {
        const cause = error.cause as NodeJS.ErrnoException
        return Effect.fail(
          new InvalidConfig({
            variable: "METRICS_PORT",
            reason: `cannot be listened on at ${host}:${port}: ${cause.code === "EADDRINUSE" ? "the address is in use" : cause.message}`
          })
        )
      })
    )
    // Scrapes make no request spans: their statements' spans are the only ones.
    yield* server.serve(app).pipe(Effect.provideService(HttpMiddleware.TracerDisabledWhen, () => true))
    // Added last, so it runs first: the platform's own stop then finds the socket closed.
    yield* Effect.addFinalizer(() => closeNow(node))
    yield* Effect.logDebug(`Metrics on http://${host}:${port}/metrics`)
  })

/**
 * With `METRICS_PORT`: every labelled series at 0, then the listener, over
 * `gauges` (which `App.ts` makes from each feature's readers); without it,
 * nothing, not even the gauges. In the server and in `npm run worker`.
 */
export const layer = <R>(gauges: Layer.Layer<Gauges, never, R>) =>
  Layer.unwrap(Effect.gen(function*() {
    const config = yield* ObservabilityConfig
    if (Option.isNone(config.metricsPort)) return Layer.empty
    return Layer.effectDiscard(Effect.andThen(zeroes, listen(config.metricsPort.value, config.metricsHost))).pipe(
      Layer.provide(gauges)
    )
  }))
