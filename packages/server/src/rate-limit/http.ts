import { RateLimit, RateLimitExceededError, RateLimits, RateLimitUnavailableError } from "@hearken/api"
import { Effect, Layer } from "effect"
import { HttpEffect, HttpServerRequest, HttpServerResponse } from "effect/http"
import { ServerConfig } from "../config.js"
import * as Metrics from "../observability/Metrics.js"
import { bucketOf, clientAddress } from "./ClientIp.js"
import { type Decision, RateLimiter } from "./RateLimiter.js"

const seconds = (ms: number) => Math.max(0, Math.ceil(ms / 1000))

/** Whole seconds until a refused client may try again: never 0. */
const retryAfterSeconds = (decision: Decision) => Math.max(1, seconds(decision.retryAfterMs))

const headersOf = (limit: number, decision: Decision): Record<string, string> => ({
  "ratelimit-limit": String(limit),
  "ratelimit-remaining": String(decision.remaining),
  "ratelimit-reset": String(seconds(decision.resetMs)),
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
 * Spends one request from the caller's bucket (endpoint × client IP) before
 * anything else happens, and puts `RateLimit-*` on whatever response follows.
 */
export const layer = Layer.effect(
  RateLimit,
  Effect.gen(function*() {
    const limiter = yield* RateLimiter
    const config = yield* ServerConfig
    const limits: Record<string, number> = Object.fromEntries(
      Object.entries(RateLimits).map(([endpoint, perMinute]) => [endpoint, Math.round(perMinute * config.rateLimitMultiplier)])
    )
    return (httpEffect, { endpoint }) =>
      Effect.gen(function*() {
        const limit = yield* limitFor(limits, endpoint.identifier)
        const request = yield* HttpServerRequest.HttpServerRequest
        const address = clientAddress(
          request.peerAddress._tag === "Some" ? request.peerAddress.value : undefined,
          request.headers["x-forwarded-for"],
          config.trustProxy
        )
        const bucket = `${endpoint.identifier}:${address === undefined ? "unknown" : bucketOf(address)}`
        const decision = yield* limiter.consume(bucket, limit).pipe(
          Effect.catchTag("RateLimiterUnavailable", () =>
            Metrics.rateLimitDecision(endpoint.identifier, "unavailable").pipe(
              Effect.andThen(setHeaders({ "retry-after": "1" })),
              Effect.andThen(Effect.fail(unavailable))
            ))
        )
        yield* Metrics.rateLimitDecision(endpoint.identifier, decision.allowed ? "allowed" : "limited")
        yield* setHeaders(headersOf(limit, decision))
        if (!decision.allowed) {
          return yield* new RateLimitExceededError({
            message: `At most ${limit} requests per minute; retry in ${retryAfterSeconds(decision)} s`
          })
        }
        return yield* httpEffect
      })
  })
)
