import { rateLimitWindowMs } from "@hearken/api"
import { Clock, Context, Data, Effect, Layer, Option, Redacted, Schedule } from "effect"
import { Redis, type RedisOptions } from "ioredis"
import { ServerConfig } from "../config.js"
import { gcra, type GcraResult, redisScript } from "./gcra.js"

export type Decision = Omit<GcraResult, "tat">

/** The store could not answer (Redis down, or slower than the command timeout). */
export class RateLimiterUnavailable extends Data.TaggedError("RateLimiterUnavailable")<{ readonly cause: unknown }> {}

export const periodMs = rateLimitWindowMs
/** Past this a Redis answer is too late: the request is refused with 503 instead of waiting. */
export const redisTimeoutMs = 500

/**
 * The limiter's Redis client: no offline queue and no retries per command, so
 * that a Redis that is down or frozen fails a request fast (503), while the
 * connection itself keeps reconnecting in the background.
 */
export const redisOptions = {
  enableOfflineQueue: false,
  commandTimeout: redisTimeoutMs,
  maxRetriesPerRequest: 0,
  connectTimeout: 1_000,
  retryStrategy: (attempt: number) => Math.min(100 * attempt, 1_000)
} satisfies RedisOptions

const keyPrefix = "hearken:rl:"

/** Every decision is a span of its request, whichever store makes it. */
const traced = Effect.withSpan("RateLimiter.consume")

/** How often the in-process store forgets buckets that are full again. */
export const sweepIntervalMs = 30_000

/**
 * The in-process store: each bucket's tat in a map, on the `Clock`, and a
 * sweep every `sweepIntervalMs` that deletes buckets whose tat has passed (a
 * full bucket needs no entry: `gcra` treats a missing tat as full). `size`
 * is for tests. Needs a scope: the sweep runs until it closes.
 */
export const memoryStore = Effect.gen(function*() {
  const tats = new Map<string, number>()
  const sweep = Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.sync(() => {
      for (const [key, tat] of tats) if (tat <= now) tats.delete(key)
    }))
  yield* Effect.forkScoped(Effect.repeat(sweep, Schedule.spaced(sweepIntervalMs)).pipe(Effect.delay(sweepIntervalMs)))
  return {
    consume: (bucket: string, limit: number) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.sync(() => {
          const { tat, ...decision } = gcra(tats.get(bucket), now, limit, periodMs)
          tats.set(bucket, tat)
          return decision as Decision
        })).pipe(traced),
    size: () => tats.size
  }
})

export class RateLimiter extends Context.Service<RateLimiter, {
  /** Spends one request of `limit` per minute from `bucket`. */
  readonly consume: (bucket: string, limit: number) => Effect.Effect<Decision, RateLimiterUnavailable>
}>()("hearken/RateLimiter") {
  /** In-process GCRA, the embedded default (`memoryStore`). */
  static readonly layerMemory = Layer.effect(
    RateLimiter,
    Effect.map(memoryStore, ({ consume }) => RateLimiter.of({ consume }))
  )

  /**
   * GCRA in Redis: one atomic EVALSHA per request (ioredis falls back to EVAL
   * after NOSCRIPT, e.g. when a restarted Redis lost its scripts). No offline
   * queue and a 500 ms command timeout, so an absent or frozen Redis fails
   * requests fast instead of piling them up; reconnection is automatic.
   */
  static readonly layerRedis = (url: Redacted.Redacted<string>) =>
    Layer.effect(
      RateLimiter,
      Effect.gen(function*() {
        // ioredis reports every failed reconnection; one line per 10 s is enough. On the layer's own
        // services, so the line goes through the configured logger and the time through the Clock.
        const fork = Effect.runForkWith(yield* Effect.context<never>())
        let lastLog = -Infinity
        const unavailable = (error: Error) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) => {
            if (now - lastLog < 10_000) return Effect.void
            lastLog = now
            return Effect.logWarning(`Redis for rate limiting is unavailable: ${error.message}`)
          })
        const client = yield* Effect.acquireRelease(
          Effect.sync(() => {
            const redis = new Redis(Redacted.value(url), redisOptions)
            redis.defineCommand("hearkenGcra", { numberOfKeys: 1, lua: redisScript })
            redis.on("error", (error: Error) => void fork(unavailable(error)))
            return redis
          }),
          (redis) => Effect.sync(() => redis.disconnect())
        )
        // Without an offline queue, requests before the first connection would get 503:
        // give Redis a moment at start-up, but never refuse to start without it.
        yield* Effect.callback<void>((resume) => {
          if (client.status === "ready") return resume(Effect.void)
          const ready = () => resume(Effect.void)
          client.once("ready", ready)
          return Effect.sync(() => client.off("ready", ready))
        }).pipe(
          Effect.timeoutOrElse({
            duration: "3 seconds",
            orElse: () => Effect.logWarning("Redis is not reachable yet; rate-limited routes answer 503 until it is")
          })
        )
        const run = (client as unknown as {
          hearkenGcra: (key: string, limit: number, period: number) => Promise<[number, number, number, number]>
        }).hearkenGcra.bind(client)
        return RateLimiter.of({
          consume: (bucket, limit) =>
            Effect.tryPromise({
              try: () => run(keyPrefix + bucket, limit, periodMs),
              catch: (cause) => new RateLimiterUnavailable({ cause })
            }).pipe(
              Effect.timeoutOrElse({
                duration: redisTimeoutMs + 50,
                orElse: () => Effect.fail(new RateLimiterUnavailable({ cause: "timeout" }))
              }),
              Effect.map(([allowed, remaining, resetMs, retryAfterMs]) => ({
                allowed: allowed === 1,
                remaining,
                resetMs,
                retryAfterMs
              })),
              traced
            )
        })
      })
    )

  /** Redis when `REDIS_URL` is set, else in-process. */
  static readonly layer = Layer.unwrap(Effect.gen(function*() {
    const config = yield* ServerConfig
    return Option.match(config.redisUrl, { onNone: () => RateLimiter.layerMemory, onSome: RateLimiter.layerRedis })
  }))
}
