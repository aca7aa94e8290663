import { DataValidationError } from "@hearken/api/effect"
import { requestHeaders, responseHeaders } from "@hearken/api/thin"
import { Cause, Effect, Layer, Option, References } from "effect"
import { HttpMiddleware, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpConfig } from "../config/http.js"
import { ObservabilityConfig } from "../config/observability.js"
import * as Tracing from "../observability/Tracing.js"
import { rateLimitHeaders } from "../rate-limit/RateLimitGate.js"
import * as ErrorBodies from "../edge/ErrorBodies.js"
import { internalError } from "./RequestErrors.js"

const notFound = HttpServerResponse.jsonUnsafe(ErrorBodies.routeNotFound, { status: 404 })

/** What no endpoint answers: unknown routes get a JSON 404, anything else a JSON 500 with no detail. */
export const fallback = HttpRouter.middleware((httpEffect) =>
  Effect.catchCause(httpEffect, (cause) => {
    if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
    if (ErrorBodies.isRouteNotFound(cause)) return Effect.succeed(notFound)
    // The 500 names its trace (when traced) in `detail`, so that a user's report finds the log line.
    return Effect.map(internalError("Unhandled failure outside the API", cause), (error) => ErrorBodies.respond(error))
  }), { global: true })

const refused = (message: string) => ErrorBodies.respond(new DataValidationError({ message }), { headers: { connection: "close" } })
const hostMissing = refused("Host: required")
const hostRepeated = refused("Host: more than one")
const transferCodingRefused = refused("Transfer-Encoding: must be a single chunked")
const transferCodingInHttp10 = refused("Transfer-Encoding: not allowed in HTTP/1.0")

/**
 * The `Host` and `Transfer-Encoding` field lines as the client sent them, in
 * one pass over the raw headers (every request goes through here): a name is
 * lowercased only when its length matches.
 */
const framingFields = (rawHeaders: ReadonlyArray<string>) => {
  const hosts: Array<string> = []
  const transferEncodings: Array<string> = []
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!
    if (name.length === 4 && name.toLowerCase() === "host") hosts.push(rawHeaders[i + 1]!)
    else if (name.length === 17 && name.toLowerCase() === "transfer-encoding") transferEncodings.push(rawHeaders[i + 1]!)
  }
  return { hosts, transferEncodings }
}

/** The header fault that makes a request's target or body ambiguous, if any. */
const framingFault = (source: { readonly httpVersion?: string; readonly rawHeaders?: ReadonlyArray<string> }) => {
  const { hosts, transferEncodings } = framingFields(source.rawHeaders ?? [])
  // RFC 9112 §3.2: an HTTP/1.1 request without `Host`, or with more than one, is a 400. HTTP/1.0 needs
  // none (load-balancer probes often send none).
  if (hosts.length > 1) return hostRepeated
  if (hosts.length === 0 && source.httpVersion === "1.1") return hostMissing
  // llhttp takes `identity` then `chunked`, in one field or two, as chunked; a proxy in front may
  // frame the body otherwise (RFC 9112 §6.1). No coding but a single `chunked` has a use here.
  const codings = transferEncodings.flatMap((value) => value.split(","))
  // RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing, whatever it says.
  if (codings.length > 0 && source.httpVersion === "1.0") return transferCodingInHttp10
  if (codings.length > 0 && (codings.length > 1 || codings[0]!.trim().toLowerCase() !== "chunked")) {
    return transferCodingRefused
  }
  return undefined
}

/**
 * Requests whose `Host` or `Transfer-Encoding` Node's parser lets through but
 * that are ambiguous are refused here, before any route, rate limit or body
 * read, from the raw header lines (Node joins or drops repeated ones). Node's
 * own `Host` check (`requireHostHeader`) answers with an empty body, so App.ts
 * turns it off.
 */
export const requestFraming = HttpRouter.middleware((httpEffect) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    return framingFault(request.source as Parameters<typeof framingFault>[0]) ?? (yield* httpEffect)
  }), { global: true })

/**
 * The origins CORS allows (docs/api.md: "CORS"): `DASHBOARD_ORIGIN`, `PUBLIC_URL`'s
 * origin, and any-depth subdomains of `ROOT_DOMAIN` (https, or http too when
 * `PUBLIC_URL` is http).
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
  const config = yield* HttpConfig
  return HttpRouter.middleware(HttpMiddleware.cors({
    allowedOrigins: isAllowedOrigin(config),
    allowedMethods: ["GET", "POST", "OPTIONS"],
    // Exactly what the thin client and the widget send, from the list they take it from (decision 0015).
    allowedHeaders: Object.values(requestHeaders),
    // What the thin client reads, then what a hand-written client may want: its budget and the trace to report.
    exposedHeaders: [...Object.values(responseHeaders), ...Object.values(rateLimitHeaders), Tracing.traceIdHeader],
    maxAge: 600
  }), { global: true })
}))

/** Request logging, at debug level only: off the hot path unless `LOG_LEVEL=debug`. */
export const requestLog = Layer.unwrap(Effect.gen(function*() {
  const config = yield* ObservabilityConfig
  const debug = config.logLevel === "Debug" || config.logLevel === "Trace" || config.logLevel === "All"
  return debug
    ? HttpRouter.middleware(
      (httpEffect) => HttpMiddleware.logger(httpEffect).pipe(Effect.provideService(References.CurrentLogLevel, "Debug")),
      { global: true }
    )
    : Layer.empty
}))
