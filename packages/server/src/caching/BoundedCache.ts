import { Clock, Duration, Effect, Option, Schedule, type Scope } from "effect"

/**
 * What one entry costs besides its key and value: the map's slot, the entry
 * record and its numbers, as V8 lays them out (an estimate on the safe side).
 */
export const entryOverheadBytes = 96

/** What a string costs: V8 keeps a string in one or two bytes a character; two, to be safe. */
export const stringBytes = (s: string) => 2 * s.length

export interface BoundedCacheOptions<V> {
  /** Most entries kept. */
  readonly maxEntries: number
  /** Most bytes kept, counting every entry's key, value (`sizeOf`) and `entryOverheadBytes`. */
  readonly maxBytes: number
  /** How long an entry lives after it is written, unless `set` says otherwise. */
  readonly timeToLive: Duration.Input
  /** What a value takes, in bytes. */
  readonly sizeOf: (value: V) => number
  /** An entry over this many bytes (key included) is never kept; `maxBytes` by default. */
  readonly maxEntryBytes?: number
  /** How often expired entries are removed, read again or not; the `timeToLive` by default. */
  readonly sweepEvery?: Duration.Input
}

/** The cache's state at explicit times, for code that runs outside Effect (the bench's baseline server). */
export interface BoundedStore<V> {
  /** The value, unless it is missing or expired at `now`; a hit makes the entry the most recently used. */
  readonly get: (key: string, now: number) => Option.Option<V>
  /**
   * Keeps the value until `now` + `timeToLive` (the cache's by default),
   * dropping the least recently used entries to make room; a value too large
   * to keep is not kept, and an older one under its key goes.
   */
  readonly set: (key: string, value: V, now: number, timeToLive?: Duration.Input) => void
  /** Removes every entry expired at `now`. */
  readonly sweep: (now: number) => void
  readonly delete: (key: string) => void
  /** Entries kept now, expired ones not yet swept included. */
  readonly size: () => number
  /** Bytes those entries count for. */
  readonly bytes: () => number
}

const millis = (input: Duration.Input) => Duration.toMillis(Duration.fromInputUnsafe(input))

/** `make`'s state without its clock and sweep. */
export const makeStore = <V>(options: BoundedCacheOptions<V>): BoundedStore<V> => {
  const ttlMs = millis(options.timeToLive)
  const maxEntryBytes = Math.min(options.maxEntryBytes ?? options.maxBytes, options.maxBytes)
  const entries = new Map<string, { readonly value: V; readonly expiresAt: number; readonly bytes: number }>()
  let bytes = 0

  const remove = (key: string) => {
    const entry = entries.get(key)
    if (entry === undefined) return
    entries.delete(key)
    bytes -= entry.bytes
  }

  return {
    get: (key, now) => {
      const entry = entries.get(key)
      if (entry === undefined) return Option.none()
      entries.delete(key)
      if (entry.expiresAt <= now) {
        bytes -= entry.bytes
        return Option.none()
      }
      entries.set(key, entry)
      return Option.some(entry.value)
    },
    set: (key, value, now, timeToLive) => {
      remove(key)
      const size = stringBytes(key) + options.sizeOf(value) + entryOverheadBytes
      const lifetime = timeToLive === undefined ? ttlMs : millis(timeToLive)
      if (size > maxEntryBytes || lifetime <= 0) return
      // A Map iterates in insertion order, and a hit inserts again: the first entries are the least recently used.
      for (const oldest of entries.keys()) {
        if (entries.size < options.maxEntries && bytes + size <= options.maxBytes) break
        remove(oldest)
      }
      entries.set(key, { value, expiresAt: now + lifetime, bytes: size })
      bytes += size
    },
    sweep: (now) => {
      for (const [key, entry] of entries) if (entry.expiresAt <= now) remove(key)
    },
    delete: remove,
    size: () => entries.size,
    bytes: () => bytes
  }
}

export interface BoundedCache<V> {
  /** The value, unless it is missing or expired; a hit makes the entry the most recently used. */
  readonly get: (key: string) => Effect.Effect<Option.Option<V>>
  /** Keeps the value for `timeToLive` (the cache's by default), as `BoundedStore.set`. */
  readonly set: (key: string, value: V, timeToLive?: Duration.Input) => Effect.Effect<void>
  /** The value, or `load`'s success, which is kept; a failure is not. */
  readonly getOrLoad: <E, R>(key: string, load: Effect.Effect<V, E, R>) => Effect.Effect<V, E, R>
  readonly delete: (key: string) => Effect.Effect<void>
  /** Entries kept now, expired ones not yet swept included. */
  readonly size: () => number
  /** Bytes those entries count for. */
  readonly bytes: () => number
  /** The same entries at explicit times: for a read and a write that no other fiber may come between. */
  readonly store: BoundedStore<V>
}

/**
 * An in-process cache that no request can grow without bound (decision 0025):
 * at most `maxEntries` entries and `maxBytes` bytes, keys included, least
 * recently used out first, and every entry gone once its time is up, whether
 * or not its key is read again: a sweep on the `Clock` every `sweepEvery`
 * removes the expired entries, and a read never returns one. Needs a scope:
 * the sweep runs until it closes.
 *
 * Effect's own `Cache` bounds the number of entries only, not their bytes,
 * and drops an expired entry only when its key is read again.
 */
export const make = <V>(options: BoundedCacheOptions<V>): Effect.Effect<BoundedCache<V>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const store = makeStore(options)
    const every = millis(options.sweepEvery ?? options.timeToLive)
    const sweep = Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => store.sweep(now)))
    yield* Effect.forkScoped(Effect.repeat(sweep, Schedule.spaced(every)).pipe(Effect.delay(every)))

    const get = (key: string) => Effect.map(Clock.currentTimeMillis, (now) => store.get(key, now))
    const set = (key: string, value: V, timeToLive?: Duration.Input) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => store.set(key, value, now, timeToLive)))
    return {
      get,
      set,
      getOrLoad: <E, R>(key: string, load: Effect.Effect<V, E, R>) =>
        Effect.flatMap(get(key), (cached) =>
          Option.isSome(cached) ? Effect.succeed(cached.value) : Effect.tap(load, (value) => set(key, value))),
      delete: (key: string) => Effect.sync(() => store.delete(key)),
      size: store.size,
      bytes: store.bytes,
      store
    }
  })
