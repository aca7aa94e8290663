import { type RateLimitedEndpoint, RateLimitExceededError, RateLimits, RateLimitUnavailableError } from "@hearken/api/effect"
import { Context, Effect, Layer } from "effect"
import { HttpEffect, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpConfig } from "../config/http.js"
import { RateLimitConfig } from "../config/rateLimits.js"
import * as ErrorBodies from "../edge/ErrorBodies.js"
import * as Metrics from "../observability/Metrics.js"
import { bucketOf, clientAddress } from "./ClientIp.js"
import { type Decision, RateLimiter } from "./RateLimiter.js"

const seconds = (ms: number) => Math.max(0, Math.ceil(ms / 1000))

/** Whole seconds until a refused client may try again: never 0. */
const retryAfterSeconds = (decision: Decision) => Math.max(1, seconds(decision.retryAfterMs))

/** The `RateLimit-*` headers every limited answer carries (CORS exposes them, `http/Edge.ts`). */
export const rateLimitHeaders = {
  limit: "ratelimit-limit",
  remaining: "ratelimit-remaining",
  reset: "ratelimit-reset"
} as const

const headersOf = (limit: number, decision: Decision): Record<string, string> => ({
  [rateLimitHeaders.limit]: String(limit),
  [rateLimitHeaders.remaining]: String(decision.remaining),
  [rateLimitHeaders.reset]: String(seconds(decision.resetMs)),
  ...(decision.allowed ? {} : { "retry-after": String(retryAfterSeconds(decision)) })
})

const setHeaders = (headers: Record<string, string>) =>
  HttpEffect.appendPreResponseHandler((_, response) => Effect.succeed(HttpServerResponse.setHeaders(response, headers)))

/**
 * An endpoint's limit, scaled. `RateLimits` is typed by the widget's endpoints,
 * so a missing entry does not compile; should one be missing anyway, the
 * request fails (a defect, answered 500) instead of going unlimited.
 */
export const limitFor = (limits: Readonly<Record<string, number>>, endpoint: string): Effect.Effect<number> => {
  const limit = Object.hasOwn(limits, endpoint) ? limits[endpoint] : undefined
  return limit === undefined ? Effect.die(new Error(`No rate limit for endpoint ${endpoint}`)) : Effect.succeed(limit)
}

const unavailable = new RateLimitUnavailableError({ message: "Rate limiting is temporarily unavailable; retry shortly" })

/**
 * Spends one request from the caller's bucket (endpoint × client IP) and puts
 * `RateLimit-*` on whatever response follows. One gate for the API's
 * middleware and for the routes outside the API (`/docs`), so both count the
 * same way, from the same table and the same client-IP rules.
 */
export class RateLimitGate extends Context.Service<RateLimitGate, {
  readonly admit: (
    endpoint: RateLimitedEndpoint
  ) => Effect.Effect<void, RateLimitExceededError | RateLimitUnavailableError, HttpServerRequest.HttpServerRequest>
}>()("hearken/RateLimitGate") {
  /** Needs the `RateLimiter`. */
  static readonly layerNoDeps = Layer.effect(
    RateLimitGate,
    Effect.gen(function*() {
      const limiter = yield* RateLimiter
      const { rateLimitMultiplier } = yield* RateLimitConfig
      const { trustProxy } = yield* HttpConfig
      const limits: Record<string, number> = Object.fromEntries(
        Object.entries(RateLimits).map(([endpoint, perMinute]) => [endpoint, Math.round(perMinute * rateLimitMultiplier)])
      )
      // Untraced: it runs on every limited request, and `RateLimiter.consume` is already its span.
      const admit = Effect.fnUntraced(function*(endpoint: RateLimitedEndpoint) {
        const limit = yield* limitFor(limits, endpoint)
        const request = yield* HttpServerRequest.HttpServerRequest
        const address = clientAddress(
          request.peerAddress._tag === "Some" ? request.peerAddress.value : undefined,
          request.headers["x-forwarded-for"],
          trustProxy
        )
        const bucket = `${endpoint}:${address === undefined ? "unknown" : bucketOf(address)}`
        const decision = yield* limiter.consume(bucket, limit).pipe(
          Effect.catchTag("RateLimiterUnavailable", () =>
            Metrics.rateLimitDecision(endpoint, "unavailable").pipe(
              Effect.andThen(setHeaders({ "retry-after": "1" })),
              Effect.andThen(Effect.fail(unavailable))
            ))
        )
        yield* Metrics.rateLimitDecision(endpoint, decision.allowed ? "allowed" : "limited")
        yield* setHeaders(headersOf(limit, decision))
        if (!decision.allowed) {
          return yield* new RateLimitExceededError({
            message: `At most ${limit} requests per minute; retry in ${retryAfterSeconds(decision)} s`
          })
        }
      })
      return RateLimitGate.of({ admit })
    })
  )

  /** Over `RateLimiter.layer`: Redis when `REDIS_URL` is set, else in-process. */
  static readonly layer = this.layerNoDeps.pipe(Layer.provide(RateLimiter.layer))
}

/** A route outside the API behind `endpoint`'s limit, refused with the API's JSON bodies (429, 503). */
export const limited = (gate: RateLimitGate["Service"], endpoint: RateLimitedEndpoint) =>
<E, R>(handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  gate.admit(endpoint).pipe(Effect.matchEffect({ onFailure: (error) => Effect.succeed(ErrorBodies.respond(error)), onSuccess: () => handler }))
