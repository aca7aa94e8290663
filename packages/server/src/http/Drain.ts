import { NodeHttpServer } from "@effect/platform-node"
import { InternalServerError } from "@hearken/api"
import { Context, Duration, Effect, Layer } from "effect"
import { HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import type { Server } from "node:http"
import { Server as NetServer } from "node:net"
import * as ErrorBodies from "./ErrorBodies.js"
import { prependAuxiliaryRequestListener, shuttingDownMessage } from "./NodeErrors.js"

/**
 * Draining: the state of a server that has begun to stop (SIGTERM or SIGINT)
 * and has not exited yet (docs/decisions/0018-draining.md). The requests
 * already in flight finish and are answered; nothing new starts. Keep-alive
 * clients must learn that the connection ends, or they keep sending on it
 * for the whole grace period: every answer says `Connection: close`.
 */
export class Drain extends Context.Service<Drain, {
  /** True from the moment the server begins to stop. */
  readonly draining: () => boolean
  readonly begin: () => void
}>()("hearken/Drain") {
  /** One flag for the listener and the router: read on every request, so a plain variable. */
  static readonly layer = Layer.sync(Drain, () => {
    let draining = false
    return { draining: () => draining, begin: () => void (draining = true) }
  })
}

/**
 * Stops the server, draining it (0018), and resumes once every connection has
 * ended. In this order:
 * 1. the flag: from here on every answer closes its connection, and a new
 *    request is refused;
 * 2. the listener closes, with `net.Server`'s `close`: `http.Server`'s would
 *    also close the idle keep-alive connections at once, before step 3;
 * 3. one whole poll phase of the event loop (two `setImmediate`s: the first
 *    may fire before this turn's poll) reads what has already arrived: a
 *    request a client sent on a connection Node counts as idle gets the 503
 *    instead of a reset;
 * 4. the idle connections close; a busy one closes after its answer.
 */
const stop = (node: Server, drain: Drain["Service"]) =>
  Effect.callback<void>((resume) => {
    drain.begin()
    NetServer.prototype.close.call(node, () => resume(Effect.void))
    setImmediate(() => setImmediate(() => node.closeIdleConnections()))
  })

/**
 * `NodeHttpServer.layerServer`, draining when it stops: `stop` runs first,
 * for up to `gracefulShutdownTimeout`, and the platform's own stop then finds
 * the listener closed and detaches the handler (a request still running is
 * interrupted). Scope finalizers run last-added first, and `stop` is added
 * after the platform's.
 */
export const layerServer = (evaluate: () => Server, options: NodeHttpServer.Options) =>
  Layer.effect(
    HttpServer.HttpServer,
    Effect.gen(function*() {
      const drain = yield* Drain
      const node = evaluate()
      // Whoever answers a request that arrives while draining (the refusal below, a CORS
      // preflight, the 503 of `NodeErrors` once no handler is attached), the connection ends after it.
      prependAuxiliaryRequestListener(node, (_request, response) => {
        if (drain.draining()) response.setHeader("connection", "close")
      })
      const server = yield* NodeHttpServer.make(() => node, options)
      const draining = Effect.timeoutOrElse(stop(node, drain), {
        duration: options.gracefulShutdownTimeout ?? Duration.seconds(20),
        orElse: () => Effect.void
      })
      return HttpServer.make({
        address: server.address,
        serve: (httpEffect, middleware) =>
          (middleware === undefined ? server.serve(httpEffect) : server.serve(httpEffect, middleware)).pipe(
            Effect.andThen(Effect.addFinalizer(() => draining))
          )
      })
    })
  )

const shuttingDown = ErrorBodies.respond(new InternalServerError({ message: shuttingDownMessage }), {
  status: 503,
  headers: { "retry-after": "1", connection: "close" }
})

/**
 * The router's first check after CORS (so a browser can read the 503): while
 * draining, a request is refused before any route, rate limit or body read.
 * An answer in flight when draining began is sent with `Connection: close`.
 */
export const refuse = HttpRouter.middleware(
  Effect.gen(function*() {
    const drain = yield* Drain
    return (httpEffect) =>
      Effect.suspend(() =>
        drain.draining()
          ? Effect.succeed(shuttingDown)
          : Effect.map(httpEffect, (response) =>
            drain.draining() ? HttpServerResponse.setHeader(response, "connection", "close") : response)
      )
  }),
  { global: true }
)
