import { NodeHttpServer } from "@effect/platform-node"
import { InternalServerError } from "@hearken/api/effect"
import { Context, Duration, Effect, Layer } from "effect"
import { HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import type { IncomingMessage, Server, ServerResponse } from "node:http"
import { Server as NetServer } from "node:net"
import * as ErrorBodies from "../edge/ErrorBodies.js"
import { answerUnavailable, prependAuxiliaryRequestListener, shuttingDownMessage } from "./NodeErrors.js"

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
  /** The requests not answered yet, with their Node responses: those still running when the grace period ends get a 503. */
  readonly inFlight: Map<IncomingMessage, ServerResponse>
}>()("hearken/Drain") {
  /** One flag for the listener and the router: read on every request, so a plain variable. */
  static readonly layer = Layer.sync(Drain, () => {
    let draining = false
    return { draining: () => draining, begin: () => void (draining = true), inFlight: new Map() }
  })
}

/**
 * The 503 refusal for a request still running when the grace period ends,
 * unless its answer has begun or its client is gone.
 */
const answerStopped = (response: ServerResponse) => {
  if (response.headersSent || response.destroyed) return
  // A pipelined response has no socket yet, and buffers.
  if (response.socket !== null && !response.socket.writable) return
  answerUnavailable(response, shuttingDownMessage)
}

/**
 * When the grace period ends: a request whose body has not all arrived is
 * answered now. Its handler has done nothing yet (the edge reads the whole
 * body first), and the interruption that follows destroys its socket, with
 * the answer, were it answered then. The others are answered once
 * interrupted (`refuse`), after their work is rolled back.
 */
const answerUnreceived = (drain: Drain["Service"]) =>
  Effect.sync(() => {
    for (const [request, response] of drain.inFlight) if (!request.complete) answerStopped(response)
  })

/**
 * Stops the server, draining it (0018, 0029), and resumes once every
 * connection has ended. In this order:
 * 1. the flag: from here on every answer closes its connection, and a new
 *    request is refused;
 * 2. the listener closes, with `net.Server`'s `close`: `http.Server`'s would
 *    also close the idle keep-alive connections at once;
 * 3. an idle connection is not closed before the deadline its last answer
 *    announced (`Keep-Alive: timeout=5`): a client may start a request on it
 *    until then, and closing it sooner races that request. Node closes it at
 *    that deadline (`keepAliveTimeout` + `keepAliveTimeoutBuffer` after its
 *    last answer, which came before the flag); a request that comes first
 *    gets the 503 refusal with `Connection: close`. A connection on which
 *    nothing was ever sent has no deadline of its own: it gets the same time
 *    from now, then every connection still idle closes. A busy one closes
 *    after its answer.
 */
const stop = (node: Server, drain: Drain["Service"]) =>
  Effect.callback<void>((resume) => {
    drain.begin()
    const idle = setTimeout(() => node.closeIdleConnections(), node.keepAliveTimeout + node.keepAliveTimeoutBuffer)
    NetServer.prototype.close.call(node, () => {
      clearTimeout(idle)
      resume(Effect.void)
    })
    return Effect.sync(() => clearTimeout(idle))
  })

/**
 * `NodeHttpServer.layerServer`, draining when it stops: `stop` runs first,
 * for up to `gracefulShutdownTimeout`, and the platform's own stop then finds
 * the listener closed and detaches the handler (a request still running is
 * interrupted; both get the JSON 503). Scope finalizers run last-added
 * first, and `stop` is added after the platform's.
 */
export const layerServer = (evaluate: () => Server, options: NodeHttpServer.Options) =>
  Layer.effect(
    HttpServer.HttpServer,
    Effect.gen(function*() {
      const drain = yield* Drain
      const node = evaluate()
      // Whoever answers a request that arrives while draining (the refusal below, a CORS
      // preflight, the 503 of `NodeErrors` once no handler is attached), the connection ends after it.
      prependAuxiliaryRequestListener(node, (request, response) => {
        drain.inFlight.set(request, response)
        response.once("close", () => drain.inFlight.delete(request))
        if (drain.draining()) response.setHeader("connection", "close")
      })
      const server = yield* NodeHttpServer.make(() => node, options)
      const grace = Duration.fromInputUnsafe(options.gracefulShutdownTimeout ?? Duration.seconds(20))
      // One line when draining begins and one when it ends, so an operator's log says where a stop is (issue 29).
      const draining = Effect.logInfo(
        `Draining: new requests get 503; ${drain.inFlight.size} in flight finish within ${Duration.format(grace)}`
      ).pipe(
        Effect.andThen(Effect.timeoutOrElse(stop(node, drain).pipe(Effect.as("every connection ended")), {
          duration: grace,
          orElse: () => Effect.as(answerUnreceived(drain), "the grace period ran out: requests still unanswered got 503")
        })),
        Effect.flatMap((how) => Effect.logInfo(`Stopped listening: ${how}`))
      )
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
 * A request still running when the grace period ends is interrupted (its
 * transaction rolled back); it then gets the same JSON 503, written to the
 * Node response before the platform would write its empty one. A client that
 * went away (an interrupt too) gets nothing.
 */
export const refuse = HttpRouter.middleware(
  Effect.gen(function*() {
    const drain = yield* Drain
    const answerInterrupted = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      Effect.sync(() => {
        // A client that goes away interrupts too: its socket is no longer writable.
        const response = drain.inFlight.get(request.source as IncomingMessage)
        if (drain.draining() && response !== undefined) answerStopped(response)
      }))
    return (httpEffect) =>
      Effect.suspend(() =>
        drain.draining()
          ? Effect.succeed(shuttingDown)
          : Effect.map(httpEffect, (response) =>
            drain.draining() ? HttpServerResponse.setHeader(response, "connection", "close") : response).pipe(
              Effect.onInterrupt(() => answerInterrupted)
            )
      )
  }),
  { global: true }
)
