import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { TestClock } from "effect/testing"
import { entryOverheadBytes, make } from "../packages/server/src/caching/BoundedCache.js"
import { draftKey } from "../packages/server/src/suggestions/Semantic.js"

/**
 * The in-process caches' one module (decision 0025) on the TestClock: bounded
 * in entries and in bytes, keys counted, and expired entries removed on time
 * whether or not anyone reads them again.
 */
const sizeOfString = (s: string) => 2 * s.length
/** What an entry of a one-character key and `value` counts for. */
const costOf = (value: string) => 2 + sizeOfString(value) + entryOverheadBytes

describe("BoundedCache", () => {
  it.effect("keeps at most maxEntries, dropping the least recently used", () =>
    Effect.scoped(Effect.gen(function*() {
      const cache = yield* make<string>({ maxEntries: 3, maxBytes: 1_000_000, timeToLive: "1 minute", sizeOf: sizeOfString })
      for (const key of ["a", "b", "c"]) yield* cache.set(key, key)
      // A read makes "a" the most recently used: "b" goes first.
      expect(yield* cache.get("a")).toEqual(Option.some("a"))
      yield* cache.set("d", "d")
      expect(cache.size()).toBe(3)
      expect(yield* cache.get("b")).toEqual(Option.none())
      for (const key of ["a", "c", "d"]) expect(yield* cache.get(key)).toEqual(Option.some(key))
    })))

  it.effect("keeps at most maxBytes, counting keys, values and the overhead of each entry", () =>
    Effect.scoped(Effect.gen(function*() {
      const cache = yield* make<string>({ maxEntries: 1_000, maxBytes: 4 * costOf("xxxx"), timeToLive: "1 minute", sizeOf: sizeOfString })
      for (const key of ["a", "b", "c"]) yield* cache.set(key, "xxxx")
      expect(cache.bytes()).toBe(3 * costOf("xxxx"))
      // The same value under a key of 100 characters costs 198 bytes more: room is made by dropping the two oldest.
      const longKey = "k".repeat(100)
      yield* cache.set(longKey, "xxxx")
      expect(cache.bytes()).toBe(200 + 8 + entryOverheadBytes + costOf("xxxx"))
      expect(cache.size()).toBe(2)
      expect(yield* cache.get("a")).toEqual(Option.none())
      expect(yield* cache.get("b")).toEqual(Option.none())
      expect(yield* cache.get("c")).toEqual(Option.some("xxxx"))
      // A key alone over the budget is never kept, and displaces nothing.
      yield* cache.set("k".repeat(1_000), "")
      expect(cache.size()).toBe(2)
      expect(cache.bytes()).toBe(200 + 8 + entryOverheadBytes + costOf("xxxx"))
    })))

  it.effect("never keeps an entry over maxEntryBytes, and forgets the older value under its key", () =>
    Effect.scoped(Effect.gen(function*() {
      const cache = yield* make<string>({ maxEntries: 10, maxBytes: 10_000, maxEntryBytes: costOf("small"), timeToLive: "1 minute", sizeOf: sizeOfString })
      yield* cache.set("a", "small")
      yield* cache.set("a", "larger than allowed")
      expect(yield* cache.get("a")).toEqual(Option.none())
      expect([cache.size(), cache.bytes()]).toEqual([0, 0])
    })))

  it.effect("removes expired entries on time, with no read of their keys", () =>
    Effect.scoped(Effect.gen(function*() {
      const cache = yield* make<string>({ maxEntries: 100, maxBytes: 100_000, timeToLive: "10 seconds", sizeOf: sizeOfString })
      for (let i = 0; i < 50; i++) yield* cache.set(`key-${i}`, "value")
      yield* TestClock.adjust("5 seconds")
      yield* cache.set("later", "value")
      yield* TestClock.adjust("5 seconds")
      // The first 50 expired at 10 s and the sweep at 10 s removed them, though nobody asked for them again.
      expect(cache.size()).toBe(1)
      expect(yield* cache.get("later")).toEqual(Option.some("value"))
      yield* TestClock.adjust("10 seconds")
      expect([cache.size(), cache.bytes()]).toEqual([0, 0])
    })))

  it.effect("never answers with an expired entry, even before the sweep", () =>
    Effect.scoped(Effect.gen(function*() {
      const cache = yield* make<string>({ maxEntries: 10, maxBytes: 10_000, timeToLive: "10 seconds", sweepEvery: "1 hour", sizeOf: sizeOfString })
      yield* cache.set("a", "value")
      yield* cache.set("b", "value", "2 seconds")
      yield* TestClock.adjust("2 seconds")
      expect(yield* cache.get("b")).toEqual(Option.none())
      expect(yield* cache.get("a")).toEqual(Option.some("value"))
      yield* TestClock.adjust("8 seconds")
      expect(yield* cache.get("a")).toEqual(Option.none())
      expect(cache.bytes()).toBe(0)
    })))

  it.effect("keeps what getOrLoad loads, and not a failure", () =>
    Effect.scoped(Effect.gen(function*() {
      const cache = yield* make<string>({ maxEntries: 10, maxBytes: 10_000, timeToLive: "10 seconds", sizeOf: sizeOfString })
      let loads = 0
      const load = Effect.sync(() => `loaded ${++loads}`)
      expect(yield* cache.getOrLoad("a", load)).toBe("loaded 1")
      expect(yield* cache.getOrLoad("a", load)).toBe("loaded 1")
      expect(yield* Effect.flip(cache.getOrLoad("b", Effect.fail("down")))).toBe("down")
      expect(yield* cache.getOrLoad("b", load)).toBe("loaded 2")
      yield* TestClock.adjust("10 seconds")
      expect(yield* cache.getOrLoad("a", load)).toBe("loaded 3")
    })))

  it.effect("stops sweeping when its scope closes", () =>
    Effect.gen(function*() {
      const cache = yield* Effect.scoped(make<string>({ maxEntries: 10, maxBytes: 10_000, timeToLive: "1 second", sizeOf: sizeOfString }))
      yield* cache.set("a", "value")
      yield* TestClock.adjust("10 seconds")
      expect(cache.size()).toBe(1)
    }))
})

describe("the draft cache's key", () => {
  const model = { name: "concepts-1", dimensions: 64 }
  it("differs by organization and by model, never by the visitor", () => {
    const key = draftKey("org_a", model, "Dark mode\n\nplease")
    expect(draftKey("org_a", model, "Dark mode\n\nplease")).toBe(key)
    expect(draftKey("org_b", model, "Dark mode\n\nplease")).not.toBe(key)
    expect(draftKey("org_a", { ...model, name: "concepts-2" }, "Dark mode\n\nplease")).not.toBe(key)
    expect(draftKey("org_a", { ...model, dimensions: 32 }, "Dark mode\n\nplease")).not.toBe(key)
    // A digest: the key keeps no visitor's words, and its length does not grow with them.
    expect(key).not.toContain("Dark")
    expect(draftKey("org_a", model, "x".repeat(2_000)).length).toBe(key.length)
  })
})
