import { InternalServerError, RateLimits } from "@hearken/api"
import { Cause, Clock, Context, Effect, Exit, Layer, Metric, Option } from "effect"
import { HttpRouter, HttpServerError, HttpServerRequest } from "effect/http"
import { PrometheusMetrics } from "effect/observability"
import { SqlClient } from "effect/sql"
import { createServer } from "node:http"
import { InvalidConfig, ServerConfig } from "../config.js"
import { endpointOf } from "../http/Endpoints.js"
import * as ErrorBodies from "../http/ErrorBodies.js"
import { applicationName, poolSize } from "../sql/Database.js"

/**
 * Prometheus metrics (decision 0014). Labels are bounded: endpoint names, status
 * codes and fixed outcomes only, never an organization, an address or a post.
 * Counters are cheap updates wherever they happen; everything else (the
 * request middleware, the listener, the scrape-time queries) exists only
 * with `METRICS_PORT` set.
 */

/** Seconds: a cached GET takes a few milliseconds, a suggestion up to the embeddings timeout. */
const latencyBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

const requests = (attributes: Record<string, string>) =>
  Metric.counter("hearken_http_requests_total", {
    description: "HTTP requests answered, by endpoint and status code",
    incremental: true,
    attributes
  })
const requestDuration = (attributes: Record<string, string>) =>
  Metric.histogram("hearken_http_request_duration_seconds", {
    description: "Time from receiving a request to its response, by endpoint",
    boundaries: latencyBuckets,
    attributes
  })
const rateLimitDecisions = (attributes: Record<string, string>) =>
  Metric.counter("hearken_rate_limit_decisions_total", {
    description: "Rate-limit decisions by endpoint: allowed, limited (429) or unavailable (503, limiter unreachable)",
    incremental: true,
    attributes
  })
const embeddingsCalls = (attributes: Record<string, string>) =>
  Metric.counter("hearken_embeddings_calls_total", {
    description: "Embeddings API calls by outcome: ok, timeout, rejected (a 4xx on the input) or error",
    incremental: true,
    attributes
  })
const embeddingsDuration = (attributes: Record<string, string>) =>
  Metric.histogram("hearken_embeddings_call_duration_seconds", {
    description: "Embeddings API call time, by outcome",
    boundaries: latencyBuckets,
    attributes
  })
const webhookAttempts = (attributes: Record<string, string>) =>
  Metric.counter("hearken_webhook_attempts_total", {
    description: "Webhook attempts recorded, by outcome: succeeded, retry (will be tried again) or failed (given up)",
    incremental: true,
    attributes
  })
const traceSpansDropped = (attributes: Record<string, string>) =>
  Metric.counter("hearken_trace_spans_dropped_total", {
    description: "Spans never sent to the OTLP collector, by reason: queue_full (the export queue was full), timeout (the collector did not answer in time) or failed (it refused them or could not be reached)",
    incremental: true,
    attributes
  })
const webhookQueue = (attributes: Record<string, string>) =>
  Metric.gauge("hearken_webhook_queue_depth", {
    description: "Webhook deliveries waiting, database-wide: due (to send now), scheduled (a retry later), held (endpoint paused)",
    attributes
  })
const webhookOldestDue = Metric.gauge("hearken_webhook_oldest_due_age_seconds", {
  description: "How long the oldest due webhook delivery has been waiting (0 when none is due), database-wide"
})
const webhookPaused = Metric.gauge("hearken_webhook_paused_endpoints", {
  description: "Webhook endpoints paused after repeated failures, database-wide"
})
const embeddingsBacklog = Metric.gauge("hearken_embeddings_backlog_posts", {
  description: "Public posts without an embedding of their current text for the configured model, database-wide"
})
const poolConnections = (attributes: Record<string, string>) =>
  Metric.gauge("hearken_db_pool_connections", {
    description: "This instance's PostgreSQL connections: in_use (running a statement or in a transaction) and idle",
    attributes
  })
const poolMax = Metric.gauge("hearken_db_pool_max_connections", {
  description: "The most connections this instance's pool opens"
})

/**
 * One metric per label set, made once with its attributes: a request only
 * looks it up (`Metric.withAttributes` would copy the fiber's context on every
 * update).
 */
const labelled = <M extends Metric.Metric<any, any>>(make: (attributes: Record<string, string>) => M) => {
  const cache = new Map<string, M>()
  return (attributes: Record<string, string>): M => {
    const key = Object.values(attributes).join("\u0000")
    let found = cache.get(key)
    if (found === undefined) {
      found = make(attributes)
      cache.set(key, found)
    }
    return found
  }
}

const decisionOf = labelled(rateLimitDecisions)
export type RateLimitDecision = "allowed" | "limited" | "unavailable"
export const rateLimitDecision = (endpoint: string, decision: RateLimitDecision) =>
  Metric.update(decisionOf({ endpoint, decision }), 1)

const callsOf = labelled(embeddingsCalls)
const callTimeOf = labelled(embeddingsDuration)
export type EmbeddingsOutcome = "ok" | "timeout" | "rejected" | "error"
/** Times an embeddings call and counts it by the outcome `outcomeOf` reads from its exit. */
export const timeEmbeddingsCall = <A, E, R>(outcomeOf: (exit: Exit.Exit<A, E>) => EmbeddingsOutcome) =>
(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Clock.currentTimeMillis, (start) =>
    Effect.onExit(self, (exit) =>
      Effect.flatMap(Clock.currentTimeMillis, (end) => {
        const outcome = { outcome: outcomeOf(exit) }
        return Effect.andThen(Metric.update(callsOf(outcome), 1), Metric.update(callTimeOf(outcome), (end - start) / 1000))
      })))

const attemptsOf = labelled(webhookAttempts)
export type WebhookOutcome = "succeeded" | "retry" | "failed"
export const webhookAttempt = (outcome: WebhookOutcome) => Metric.update(attemptsOf({ outcome }), 1)

const spansDroppedOf = labelled(traceSpansDropped)
export type SpanDropReason = "queue_full" | "timeout" | "failed"
const spanDropReasons: ReadonlyArray<SpanDropReason> = ["queue_full", "timeout", "failed"]
/**
 * Counts dropped spans synchronously: a span ends (and finds the queue full)
 * inside the tracer, outside any effect. `context` is the exporter's, for the
 * metric registry.
 */
export const spansDropped = (reason: SpanDropReason, count: number, context: Context.Context<never>) =>
  spansDroppedOf({ reason }).updateUnsafe(count, context)

/**
 * A failure's status, should a handler's failure reach this middleware (it is
 * outermost in App.ts, so `http/Edge.ts` has already answered it): an
 * unknown route is the 404 the fallback sends.
 */
const failureStatus = (cause: Cause.Cause<unknown>) =>
  ErrorBodies.isRouteNotFound(cause) ? 404 : HttpServerError.causeResponseStripped(cause)[0].status

const requestsOf = labelled(requests)
const durationOf = labelled(requestDuration)

/**
 * Counts and times every request on the public port, by endpoint and status.
 * It runs on every request, so it does its work synchronously, on the fiber.
 */
const requestMetrics = HttpRouter.middleware((httpEffect) =>
  Effect.withFiber((fiber) => {
    const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
    const start = performance.now()
    return Effect.onExit(httpEffect, (exit) =>
      Effect.sync(() => {
        const status = Exit.isSuccess(exit) ? exit.value.status : failureStatus(exit.cause)
        const endpoint = endpointOf(request.method, request.url)
        const context = fiber.context
        requestsOf({ endpoint, status: String(status) }).updateUnsafe(1, context)
        durationOf({ endpoint }).updateUnsafe((performance.now() - start) / 1000, context)
      }))
  }), { global: true })

const queueOf = labelled(webhookQueue)
const poolOf = labelled(poolConnections)

interface QueueRow {
  readonly due: number
  readonly scheduled: number
  readonly held: number
  readonly oldestDueSeconds: number
  readonly paused: number
}

/** The gauges the database knows, read at scrape time: nothing runs while nobody scrapes. */
const readGauges = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const config = yield* ServerConfig
  // A new delivery's `next_attempt_at` is '-infinity' (due at once): it has been due since it was created.
  const [queue] = yield* sql<QueueRow>`SELECT
      count(*) FILTER (WHERE status = 'pending' AND next_attempt_at <= now())::int AS due,
      count(*) FILTER (WHERE status = 'pending' AND next_attempt_at > now())::int AS scheduled,
      count(*) FILTER (WHERE status = 'held')::int AS held,
      COALESCE(extract(epoch FROM now() - min(greatest(next_attempt_at, created_at))
        FILTER (WHERE status = 'pending' AND next_attempt_at <= now())), 0)::float8 AS "oldestDueSeconds",
      (SELECT count(*) FROM webhook_endpoints WHERE paused_at IS NOT NULL)::int AS paused
    FROM webhook_deliveries WHERE status IN ('pending', 'held')`
  if (queue !== undefined) {
    yield* Metric.update(queueOf({ state: "due" }), queue.due)
    yield* Metric.update(queueOf({ state: "scheduled" }), queue.scheduled)
    yield* Metric.update(queueOf({ state: "held" }), queue.held)
    yield* Metric.update(webhookOldestDue, queue.oldestDueSeconds)
    yield* Metric.update(webhookPaused, queue.paused)
  }
  if (Option.isSome(config.embeddings)) {
    const { model, dimensions } = config.embeddings.value
    const [backlog] = yield* sql<{ posts: number }>`SELECT count(*)::int AS posts FROM posts p
      WHERE p.visibility = 'public' AND NOT EXISTS (
        SELECT 1 FROM post_embeddings e WHERE e.post_id = p.id AND e.model = ${model} AND e.dimensions = ${dimensions}
          AND e.source_hash = p.text_hash)`
    yield* Metric.update(embeddingsBacklog, backlog?.posts ?? 0)
  }
  yield* Metric.update(poolMax, poolSize(config))
  // The pool of @effect/sql-pg does not expose its counts; PostgreSQL knows this instance's sessions by name.
  if (Option.isSome(config.databaseUrl)) {
    const [pool] = yield* sql<{ inUse: number; idle: number }>`SELECT
        count(*) FILTER (WHERE state <> 'idle' AND pid <> pg_backend_pid())::int AS "inUse",
        count(*) FILTER (WHERE state = 'idle')::int AS idle
      FROM pg_stat_activity WHERE application_name = ${applicationName}`
    yield* Metric.update(poolOf({ state: "in_use" }), pool?.inUse ?? 0)
    yield* Metric.update(poolOf({ state: "idle" }), pool?.idle ?? 0)
  }
})

const jsonNotFound = ErrorBodies.json(ErrorBodies.routeNotFound)
const jsonUnreadable = ErrorBodies.json(ErrorBodies.bodyOf(new InternalServerError({ message: "metrics: could not be formatted" })))

/**
 * `GET /metrics` on `METRICS_PORT` (at `METRICS_HOST`), a listener of its
 * own: never on the public port. A scrape reads the gauges first; if the
 * database does not answer, the counters are still served.
 */
const listener = (port: number, host: string) =>
  Effect.gen(function*() {
    const context = yield* Effect.context<SqlClient.SqlClient | ServerConfig>()
    const scrape = readGauges.pipe(
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

/** Starts every labelled series at 0, so that a rate over them exists before the first event. */
const zeroes = Effect.gen(function*() {
  for (const endpoint of Object.keys(RateLimits)) {
    for (const decision of ["allowed", "limited", "unavailable"] as const) yield* Metric.update(decisionOf({ endpoint, decision }), 0)
  }
  for (const outcome of ["succeeded", "retry", "failed"] as const) yield* Metric.update(attemptsOf({ outcome }), 0)
  for (const outcome of ["ok", "timeout", "rejected", "error"] as const) yield* Metric.update(callsOf({ outcome }), 0)
  for (const reason of spanDropReasons) yield* Metric.update(spansDroppedOf({ reason }), 0)
})

export class Metrics {
  /** For workers (`npm run worker`): the listener alone, no HTTP requests to count. */
  static readonly layerListener = Layer.unwrap(Effect.gen(function*() {
    const config = yield* ServerConfig
    if (Option.isNone(config.metricsPort)) return Layer.empty
    return Layer.effectDiscard(Effect.andThen(zeroes, listener(config.metricsPort.value, config.metricsHost)))
  }))

  /** With `METRICS_PORT`: the request middleware and the metrics listener; without it, nothing. */
  static readonly layer = Layer.unwrap(Effect.gen(function*() {
    const config = yield* ServerConfig
    return Option.isNone(config.metricsPort) ? Layer.empty : Layer.mergeAll(requestMetrics, Metrics.layerListener)
  }))
}
