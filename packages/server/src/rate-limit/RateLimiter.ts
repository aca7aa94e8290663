import { rateLimitWindowMs } from "@hearken/api/effect"
import { Clock, Context, Data, Effect, Layer, Option } from "effect"
import * as BoundedCache from "../caching/BoundedCache.js"
import { RateLimitConfig, type RedisTopology } from "../config/rateLimits.js"
import { gcra, type GcraResult, redisScript } from "./gcra.js"
import * as RedisClient from "./RedisClient.js"

export type Decision = Omit<GcraResult, "tat">

/** The store could not answer (Redis down, or slower than the command timeout). */
export class RateLimiterUnavailable extends Data.TaggedError("RateLimiterUnavailable")<{ readonly cause: unknown }> {}

export const periodMs = rateLimitWindowMs
export { redisOptions, redisTimeoutMs } from "./RedisClient.js"

/**
 * A bucket's key. The script reads and writes this one key (`numberOfKeys: 1`),
 * so a decision lives in one hash slot and a Cluster routes it whole; no hash
 * tag is needed, and none is added, so that keys written before issue 30 stay
 * the same (decision 0036).
 */
export const keyOf = (bucket: string) => keyPrefix + bucket
const keyPrefix = "hearken:rl:"

/** Every decision is a span of its request, whichever store makes it. */
const traced = Effect.withSpan("RateLimiter.consume")

/** How often the in-process store forgets buckets that are full again. */
export const sweepIntervalMs = 30_000
/** Buckets (endpoint × client address) the in-process store keeps at most, and their bytes, keys included (decision 0025). */
export const memoryBuckets = 100_000
export const memoryBytes = 16 * 1024 * 1024

/**
 * The in-process store: each bucket's tat, on the `Clock`, kept until it has
 * passed (a full bucket needs no entry: `gcra` treats a missing tat as full),
 * and removed by a sweep every `sweepIntervalMs` (`BoundedCache.ts`). Past
 * `memoryBuckets` the least recently used bucket is forgotten, full again
 * early: that client gets some of its budget back sooner, and memory stays
 * bounded whatever the number of addresses. `size` is for tests. Needs a
 * scope: the sweep runs until it closes.
 */
export const memoryStore = Effect.gen(function*() {
  const tats = yield* BoundedCache.make<number>({
    maxEntries: memoryBuckets,
    maxBytes: memoryBytes,
    timeToLive: periodMs,
    sweepEvery: sweepIntervalMs,
    sizeOf: () => 8
  })
  return {
    consume: (bucket: string, limit: number) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.sync(() => {
          const { tat, ...decision } = gcra(Option.getOrUndefined(tats.store.get(bucket, now)), now, limit, periodMs)
          tats.store.set(bucket, tat, now, tat - now)
          return decision as Decision
        })).pipe(traced),
    size: tats.size
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
  static readonly layerRedis = (topology: RedisTopology) =>
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
            return Effect.logWarning(`${RedisClient.describe(topology)} for rate limiting is unavailable: ${error.message}`)
          })
        const client = yield* Effect.acquireRelease(
          Effect.sync(() => {
            const redis = RedisClient.connect(topology)
            redis.defineCommand("hearkenGcra", { numberOfKeys: 1, lua: redisScript })
            redis.on("error", (error: Error) => void fork(unavailable(error)))
            // A Cluster reports a node's failures apart from its own.
            redis.on("node error", (error: Error) => void fork(unavailable(error)))
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
            orElse: () =>
              Effect.logWarning(`${RedisClient.describe(topology)} is not reachable yet; rate-limited routes answer 503 until it is`)
          })
        )
        const run = (client as unknown as {
          hearkenGcra: (key: string, limit: number, period: number) => Promise<[number, number, number, number]>
        }).hearkenGcra.bind(client)
        return RateLimiter.of({
          consume: (bucket, limit) =>
            Effect.tryPromise({
              try: () => run(keyOf(bucket), limit, periodMs),
              catch: (cause) => new RateLimiterUnavailable({ cause })
            }).pipe(
              Effect.timeoutOrElse({
                duration: RedisClient.redisTimeoutMs + 50,
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

  /** Redis when `REDIS_URL`, `REDIS_SENTINELS` or `REDIS_CLUSTER_NODES` is set, else in-process. */
  static readonly layer = Layer.unwrap(Effect.gen(function*() {
    const config = yield* RateLimitConfig
    return Option.match(config.redis, { onNone: () => RateLimiter.layerMemory, onSome: RateLimiter.layerRedis })
  }))
}
