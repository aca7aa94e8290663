import { RateLimits } from "@hearken/api/effect"
import { Cause, Clock, Context, Effect, Exit, Layer, Metric, Option } from "effect"
import { HttpRouter, HttpServerError, HttpServerRequest } from "effect/http"
import { ObservabilityConfig } from "../config/observability.js"
import { endpointOf } from "../edge/Endpoints.js"
import * as ErrorBodies from "../edge/ErrorBodies.js"

/**
 * Prometheus metrics (decision 0014): the counters and histograms, what
 * updates them, and the request middleware. Labels are bounded: endpoint
 * names, status codes and fixed outcomes only, never an organization, an
 * address or a post. Counters are cheap updates wherever they happen;
 * everything else (the request middleware here, the listener in
 * `MetricsServer.ts`, the database gauges that each feature reads for `Gauges.ts`) exists only with
 * `METRICS_PORT` set.
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
    description: "Embeddings API calls by outcome: ok, timeout, rejected (a 4xx on the input), too_large (an answer past its size limit, dropped) or error",
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
/** Seconds: a prompt receiver answers in milliseconds, a dead one holds the attempt for WEBHOOK_TIMEOUT_MS. */
const attemptBuckets = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]
const webhookAttemptDuration = (attributes: Record<string, string>) =>
  Metric.histogram("hearken_webhook_attempt_duration_seconds", {
    description: "Time each webhook attempt was in flight, by lane: healthy, or stalled (its endpoint's last attempt had failed after a second or more without an answer); the stalled sum is what dead endpoints cost",
    boundaries: attemptBuckets,
    attributes
  })
const webhookInFlight = (attributes: Record<string, string>) =>
  Metric.gauge("hearken_webhook_attempts_in_flight", {
    description: "This process's webhook attempts in flight: healthy and stalled (by lane) hold a slot each; late ones (no answer within a second) hold none",
    attributes
  })
const traceSpansDropped = (attributes: Record<string, string>) =>
  Metric.counter("hearken_trace_spans_dropped_total", {
    description: "Spans never sent to the OTLP collector, by reason: queue_full (the export queue was full), timeout (the collector did not answer in time) or failed (it refused them or could not be reached)",
    incremental: true,
    attributes
  })
const suggestionsDegraded = (attributes: Record<string, string>) =>
  Metric.counter("hearken_suggestions_degraded_total", {
    description: "Suggestions answered with less than both halves because a statement ran past the suggestions' statement timeout, by what was left: lexical (the semantic half's statement was cancelled) or none (the lexical half's was: the answer is [])",
    incremental: true,
    attributes
  })

/**
 * One metric per label set, made once with its attributes: a request only
 * looks it up (`Metric.withAttributes` would copy the fiber's context on every
 * update).
 */
export const labelled = <M extends Metric.Metric<any, any>>(make: (attributes: Record<string, string>) => M) => {
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
export type EmbeddingsOutcome = "ok" | "timeout" | "rejected" | "too_large" | "error"
const embeddingsOutcomes: ReadonlyArray<EmbeddingsOutcome> = ["ok", "timeout", "rejected", "too_large", "error"]
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

const attemptTimeOf = labelled(webhookAttemptDuration)
export type WebhookLane = "healthy" | "stalled"
export const webhookAttemptTime = (lane: WebhookLane, seconds: number) => Metric.update(attemptTimeOf({ lane }), seconds)

const inFlightOf = labelled(webhookInFlight)
export type WebhookInFlightState = WebhookLane | "late"
export const webhookAttemptsInFlight = (state: WebhookInFlightState, count: number) => Metric.update(inFlightOf({ state }), count)

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

const degradedOf = labelled(suggestionsDegraded)
export type SuggestionsDegradedTo = "lexical" | "none"
const degradedTos: ReadonlyArray<SuggestionsDegradedTo> = ["lexical", "none"]
export const suggestionsDegradedTo = (to: SuggestionsDegradedTo) => Metric.update(degradedOf({ to }), 1)

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

/**
 * Starts every labelled series at 0, so that a rate over them exists before
 * the first event: the listener runs it as it starts (`MetricsServer.ts`).
 */
export const zeroes = Effect.gen(function*() {
  for (const endpoint of Object.keys(RateLimits)) {
    for (const decision of ["allowed", "limited", "unavailable"] as const) yield* Metric.update(decisionOf({ endpoint, decision }), 0)
  }
  for (const outcome of ["succeeded", "retry", "failed"] as const) yield* Metric.update(attemptsOf({ outcome }), 0)
  for (const outcome of embeddingsOutcomes) yield* Metric.update(callsOf({ outcome }), 0)
  for (const reason of spanDropReasons) yield* Metric.update(spansDroppedOf({ reason }), 0)
  for (const to of degradedTos) yield* Metric.update(degradedOf({ to }), 0)
})

/** With `METRICS_PORT`: the request middleware; without it, nothing (the listener: `MetricsServer.layer`). */
export const layer = Layer.unwrap(Effect.gen(function*() {
  const config = yield* ObservabilityConfig
  return Option.isNone(config.metricsPort) ? Layer.empty : requestMetrics
}))
