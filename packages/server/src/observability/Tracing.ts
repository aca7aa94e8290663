import { Context, Effect, Layer, Option, Redacted, Tracer } from "effect"
import { NodeHttpClient } from "@effect/platform-node"
import {
  Headers,
  HttpClient,
  HttpClientRequest,
  HttpEffect,
  HttpRouter,
  HttpServerResponse,
  HttpTraceContext
} from "effect/http"
import { OtlpResource, OtlpSerialization } from "effect/observability"
import { ObservabilityConfig, type TracingConfig } from "../config/observability.js"
import { readBounded } from "../outbound/BoundedBody.js"
import { spansDropped } from "./Metrics.js"
import { ExportedSpan, type OtlpSpan, toOtlpSpan } from "./OtlpSpans.js"
import * as SpanQueue from "./SpanQueue.js"

/**
 * The most of a collector's answer that is read. An OTLP export answer is an
 * empty object or a `partialSuccess` with a count and a message: a few hundred
 * bytes.
 */
export const maxCollectorAnswerBytes = 64 * 1024

/** The response header that names the request's trace; a 500's `detail` holds the same id. */
export const traceIdHeader = "x-trace-id"

/**
 * Our OTLP tracer: Effect's spans, encoded as Effect's `OtlpTracer` does, but
 * queued in a `SpanQueue` (bounded, one request at a time, each with a
 * timeout, drops counted and logged once) instead of Effect's exporter, which
 * holds every batch a silent collector never answers (decision 0019).
 */
const makeTracer = Effect.fnUntraced(function*(config: TracingConfig) {
  const serialization = yield* OtlpSerialization.OtlpSerialization
  const context = yield* Effect.context<never>()
  const client = (yield* HttpClient.HttpClient).pipe(
    HttpClient.filterStatusOk,
    // The exporter's own requests carry no trace context and make no spans.
    HttpClient.transformResponse(Effect.provideService(HttpClient.TracerPropagationEnabled, false))
  )
  const resource = OtlpResource.make({ serviceName: config.serviceName, attributes: config.resourceAttributes })
  const scope = { name: "hearken" }
  const request = HttpClientRequest.post(config.url, { headers: Redacted.value(config.headers) })
  const queue = yield* SpanQueue.make<OtlpSpan>({
    maxQueueSize: config.maxQueueSize,
    maxBatchSize: config.maxExportBatchSize,
    intervalMs: config.exportIntervalMs,
    timeoutMs: config.exportTimeoutMs,
    destination: `the collector at ${config.url.origin}`,
    dropped: (reason, count) => spansDropped(reason, count, context),
    send: (spans) =>
      client.execute(
        HttpClientRequest.setBody(request, serialization.traces({ resourceSpans: [{ resource, scopeSpans: [{ scope, spans }] }] }))
      ).pipe(
        // Read to its end, so that the one socket is free for the next export, but never more than an
        // OTLP answer needs: past that the export failed and the socket is closed (decision 0028).
        Effect.flatMap((response) => readBounded(response, maxCollectorAnswerBytes)),
        Effect.asVoid,
        Effect.withTracerEnabled(false)
      )
  })
  const onEnd = (span: ExportedSpan) => queue.offer(() => toOtlpSpan(span))
  return Tracer.make({ span: (options) => new ExportedSpan(options, onEnd) })
})

const exporter = (config: TracingConfig) =>
  Layer.effect(Tracer.Tracer, makeTracer(config)).pipe(
    Layer.provide(config.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf),
    // An agent of its own, with one socket: a second can never open, whatever the client does on a timeout.
    Layer.provide(NodeHttpClient.layerNodeHttpOptions({ keepAlive: true, maxSockets: 1 }))
  )

/**
 * Spans exported over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set;
 * otherwise nothing at all: Effect's native tracer stays, and the HTTP server
 * skips its request span. Spans still queued are sent on shutdown, unless the
 * collector is failing.
 */
export const layer = Layer.unwrap(Effect.gen(function*() {
  const config = yield* ObservabilityConfig
  return Option.match(config.tracing, { onNone: () => Layer.empty, onSome: exporter })
}))

/** The current span, when spans leave the process: ids of the native tracer's spans lead nowhere. */
export const exportedSpan: Effect.Effect<Tracer.Span | undefined> = Effect.withFiber((fiber) => {
  if (fiber.getRef(Tracer.Tracer) === Tracer.nativeTracer) return Effect.undefined
  const span = Context.getOrUndefined(fiber.context, Tracer.ParentSpan)
  return Effect.succeed(span?._tag === "Span" ? span : undefined)
})

/** The trace id a 500 shows and logs, when there is an exported span. */
export const currentTraceId: Effect.Effect<string | undefined> = Effect.map(exportedSpan, (span) => span?.traceId)

/** The W3C `traceparent` of the current span, kept with work done later (a webhook event) to link back to it. */
export const currentTraceparent: Effect.Effect<string | null> = Effect.map(exportedSpan, (span) =>
  span === undefined || !span.sampled ? null : HttpTraceContext.toHeaders(span)["traceparent"] ?? null)

/** Links the current span to the span a stored `traceparent` names. */
export const linkTo = (traceparent: string | null, attributes: Record<string, unknown> = {}) =>
  traceparent === null ? Effect.void : Effect.flatMap(exportedSpan, (span) =>
    Effect.sync(() => {
      if (span === undefined) return
      const target = HttpTraceContext.w3c(Headers.fromRecordUnsafe({ traceparent }))
      if (Option.isSome(target)) span.addLinks([{ span: target.value, attributes }])
    }))

/** Links the current span to spans captured earlier in requests. */
export const linkToSpans = (spans: ReadonlyArray<Tracer.AnySpan>) =>
  spans.length === 0 ? Effect.void : Effect.flatMap(exportedSpan, (span) =>
    Effect.sync(() => span?.addLinks(spans.map((target) => ({ span: target, attributes: {} })))))

/** Puts the request's organization on its HTTP span (the current span in a handler). */
export const organization = (organizationId: string) =>
  Effect.flatMap(exportedSpan, (span) => Effect.sync(() => span?.attribute("hearken.organization_id", organizationId)))

/**
 * Every response of a traced request names its trace in `x-trace-id`, errors
 * included (a pre-response handler sees the response actually sent).
 */
export const responseHeader = Layer.unwrap(Effect.gen(function*() {
  const config = yield* ObservabilityConfig
  if (Option.isNone(config.tracing)) return Layer.empty
  return HttpRouter.middleware((httpEffect) =>
    Effect.flatMap(currentTraceId, (traceId) =>
      traceId === undefined
        ? httpEffect
        : Effect.andThen(
          HttpEffect.appendPreResponseHandler((_, response) =>
            Effect.succeed(HttpServerResponse.setHeader(response, traceIdHeader, traceId))),
          httpEffect
        )), { global: true })
}))
