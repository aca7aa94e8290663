import { Cause, Effect, Layer, Option, References } from "effect"
import { HttpMiddleware, HttpRouter, HttpServerError, HttpServerRequest, HttpServerResponse } from "effect/http"
import { ServerConfig } from "../config.js"
import * as Tracing from "../observability/Tracing.js"

const notFound = HttpServerResponse.jsonUnsafe({ _tag: "NotFoundError" }, { status: 404 })
/** A 500 names its trace (when traced) in `detail`, so that a user's report finds the log line. */
const internal = (traceId: string | undefined) =>
  HttpServerResponse.jsonUnsafe(
    { _tag: "InternalServerError", message: "Internal server error", ...(traceId === undefined ? {} : { detail: traceId }) },
    { status: 500 }
  )

const isRouteNotFound = (cause: Cause.Cause<unknown>) =>
  Option.exists(Cause.findErrorOption(cause), (e) =>
    HttpServerError.isHttpServerError(e) && e.reason._tag === "RouteNotFound")

/** What no endpoint answers: unknown routes get a JSON 404, anything else a JSON 500 with no detail. */
export const fallback = HttpRouter.middleware((httpEffect) =>
  Effect.catchCause(httpEffect, (cause) => {
    if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
    if (isRouteNotFound(cause)) return Effect.succeed(notFound)
    return Effect.flatMap(Tracing.currentTraceId, (traceId) =>
      Effect.logError("Unhandled failure outside the API", cause).pipe(
        Effect.annotateLogs(traceId === undefined ? {} : { traceId }),
        Effect.as(internal(traceId))
      ))
  }), { global: true })

const hostMissing = HttpServerResponse.jsonUnsafe(
  { _tag: "DataValidationError", message: "Host: required" },
  { status: 400, headers: { connection: "close" } }
)

/**
 * RFC 9112 §3.2: an HTTP/1.1 request without `Host` is a 400. Node's own check
 * (`requireHostHeader`) answers it with an empty body, so App.ts turns that off
 * and the check is made here, on the raw request exactly as Node makes it.
 * HTTP/1.0 needs no `Host` (load-balancer probes often send none).
 */
export const hostRequired = HttpRouter.middleware((httpEffect) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const source = request.source as { readonly httpVersion?: string; readonly headers?: { readonly host?: string } }
    if (source.httpVersion === "1.1" && source.headers?.host === undefined) return hostMissing
    return yield* httpEffect
  }), { global: true })

/**
 * Spec §5 / CONTRACT §4: `DASHBOARD_ORIGIN`, `PUBLIC_URL`'s origin, and any-depth
 * subdomains of `ROOT_DOMAIN` (https, or http too when `PUBLIC_URL` is http).
 */
export const isAllowedOrigin = (config: {
  readonly publicUrl: URL
  readonly dashboardOrigin: Option.Option<string>
  readonly rootDomain: Option.Option<string>
}) => {
  const exact = new Set([config.publicUrl.origin, ...Option.toArray(config.dashboardOrigin)])
  const protocols = config.publicUrl.protocol === "http:" ? ["https:", "http:"] : ["https:"]
  const suffix = Option.map(config.rootDomain, (domain) => `.${domain}`)
  return (origin: string | undefined): boolean => {
    if (origin === undefined || origin === "") return false
    if (exact.has(origin)) return true
    if (Option.isNone(suffix) || !URL.canParse(origin)) return false
    const url = new URL(origin)
    return url.origin === origin && protocols.includes(url.protocol) && url.hostname.endsWith(suffix.value) &&
      url.hostname.length > suffix.value.length
  }
}

export const cors = Layer.unwrap(Effect.gen(function*() {
  const config = yield* ServerConfig
  return HttpRouter.middleware(HttpMiddleware.cors({
    allowedOrigins: isAllowedOrigin(config),
    allowedMethods: ["GET", "POST", "OPTIONS"],
    // A widget may revalidate /boards and /updates itself (decision 0010): it sends If-None-Match and reads ETag.
    allowedHeaders: ["content-type", "if-none-match"],
    exposedHeaders: ["ratelimit-limit", "ratelimit-remaining", "ratelimit-reset", "retry-after", "etag", Tracing.traceIdHeader],
    maxAge: 600
  }), { global: true })
}))

/** Request logging, at debug level only: off the hot path unless `LOG_LEVEL=debug`. */
export const requestLog = Layer.unwrap(Effect.gen(function*() {
  const config = yield* ServerConfig
  const debug = config.logLevel === "Debug" || config.logLevel === "Trace" || config.logLevel === "All"
  return debug
    ? HttpRouter.middleware(
      (httpEffect) => HttpMiddleware.logger(httpEffect).pipe(Effect.provideService(References.CurrentLogLevel, "Debug")),
      { global: true }
    )
    : Layer.empty
}))
