import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { memoryBuckets, memoryStore, periodMs, RateLimiter, sweepIntervalMs } from "../packages/server/src/rate-limit/RateLimiter.js"

/**
 * The in-process rate limiter (the embedded default) on the TestClock: the
 * burst, the refill of one request every period / limit, and the sweep that
 * forgets buckets once they are full again. The real-HTTP behaviour, headers
 * and Redis included, is in rate-limit.test.ts.
 */
describe("RateLimiter.layerMemory on the TestClock", () => {
  it.effect("spends a burst of `limit`, then refuses with the wait until the next request, refilling one per period / limit", () =>
    Effect.gen(function*() {
      const limiter = yield* RateLimiter
      const burst = []
      for (let i = 0; i < 5; i++) burst.push(yield* limiter.consume("ip:a:suggestions", 5))
      expect(burst.map((d) => [d.allowed, d.remaining])).toEqual([[true, 4], [true, 3], [true, 2], [true, 1], [true, 0]])
      const refused = yield* limiter.consume("ip:a:suggestions", 5)
      expect(refused).toEqual({ allowed: false, remaining: 0, resetMs: periodMs, retryAfterMs: periodMs / 5 })
      // Another bucket has its own budget.
      expect((yield* limiter.consume("ip:b:suggestions", 5)).allowed).toBe(true)

      yield* TestClock.adjust(periodMs / 5 - 1)
      expect((yield* limiter.consume("ip:a:suggestions", 5)).retryAfterMs).toBe(1)
      yield* TestClock.adjust(1)
      expect(yield* limiter.consume("ip:a:suggestions", 5)).toEqual({ allowed: true, remaining: 0, resetMs: periodMs, retryAfterMs: 0 })
      // A whole period later the whole burst is back.
      yield* TestClock.adjust(periodMs)
      const again = []
      for (let i = 0; i < 6; i++) again.push((yield* limiter.consume("ip:a:suggestions", 5)).allowed)
      expect(again).toEqual([true, true, true, true, true, false])
    }).pipe(Effect.provide(RateLimiter.layerMemory)))

  it.effect("sweeps a bucket once it is full again, every 30 s, and keeps the ones still spending", () =>
    Effect.scoped(Effect.gen(function*() {
      const store = yield* memoryStore
      yield* store.consume("ip:a:feedback", 20) // full again 3 s later
      for (let i = 0; i < 20; i++) yield* store.consume("ip:b:feedback", 20) // full again 60 s later
      expect(store.size()).toBe(2)
      yield* TestClock.adjust(sweepIntervalMs - 1)
      expect(store.size()).toBe(2) // no sweep yet
      yield* TestClock.adjust(1)
      expect(store.size()).toBe(1) // a's tat passed; b is still spending
      yield* TestClock.adjust(sweepIntervalMs)
      expect(store.size()).toBe(0)
      // A swept bucket starts full.
      expect(yield* store.consume("ip:b:feedback", 20)).toMatchObject({ allowed: true, remaining: 19 })
    })))

  it.effect("keeps at most memoryBuckets buckets, forgetting the least recently used (decision 0025)", () =>
    Effect.scoped(Effect.gen(function*() {
      const store = yield* memoryStore
      for (let i = 0; i < 5; i++) yield* store.consume("ip:first:suggestions", 5)
      expect((yield* store.consume("ip:first:suggestions", 5)).allowed).toBe(false)
      for (let i = 0; i < memoryBuckets + 10; i++) yield* store.consume(`ip:10.${i >> 16}.${(i >> 8) & 255}.${i & 255}:boards`, 120)
      expect(store.size()).toBe(memoryBuckets)
      // The first client's bucket was the least recently used: it starts full again.
      expect(yield* store.consume("ip:first:suggestions", 5)).toMatchObject({ allowed: true, remaining: 4 })
    })))

  it.effect("stops sweeping when its scope closes", () =>
    Effect.gen(function*() {
      const store = yield* Effect.scoped(Effect.tap(memoryStore, (s) => s.consume("ip:a:boards", 120)))
      yield* TestClock.adjust(5 * sweepIntervalMs)
      expect(store.size()).toBe(1)
    }))
})
