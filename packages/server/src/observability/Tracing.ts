import { Context, Effect, Layer, Option, Redacted, Tracer } from "effect"
import { FetchHttpClient, Headers, HttpEffect, HttpRouter, HttpServerResponse, HttpTraceContext } from "effect/http"
import { OtlpSerialization, OtlpTracer } from "effect/observability"
import { ServerConfig, type TracingConfig } from "../config.js"

/** The response header that names the request's trace; a 500's `detail` holds the same id. */
export const traceIdHeader = "x-trace-id"

const exporter = (config: TracingConfig) =>
  OtlpTracer.layer({
    url: config.url.toString(),
    resource: { serviceName: config.serviceName, attributes: config.resourceAttributes },
    headers: Redacted.value(config.headers),
    exportInterval: config.exportIntervalMs
  }).pipe(
    Layer.provide(config.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf),
    Layer.provide(FetchHttpClient.layer)
  )

/**
 * Spans exported over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set;
 * otherwise nothing at all: Effect's native tracer stays, and the HTTP server
 * skips its request span. Spans still in the buffer are sent on shutdown.
 */
export const layer = Layer.unwrap(Effect.gen(function*() {
  const config = yield* ServerConfig
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
  const config = yield* ServerConfig
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
