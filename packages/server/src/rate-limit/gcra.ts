/**
 * GCRA (generic cell rate algorithm), the limiter's single source of truth.
 * `tat` is the theoretical arrival time: when the bucket would be empty again.
 * A full budget of `limit` requests may be spent at once; after that one
 * request is allowed every `period / limit`. No window boundary exists, so no
 * double burst is possible. `redisScript` is the same arithmetic in Lua.
 */
export interface GcraResult {
  readonly allowed: boolean
  /** The tat to store (unchanged when denied). */
  readonly tat: number
  readonly remaining: number
  /** Until the whole budget is back. */
  readonly resetMs: number
  /** Until the next request would be allowed (0 when allowed). */
  readonly retryAfterMs: number
}

const epsilon = 1e-6

export const gcra = (storedTat: number | undefined, now: number, limit: number, periodMs: number): GcraResult => {
  const interval = periodMs / limit
  const tat = storedTat === undefined || storedTat < now ? now : storedTat
  const newTat = tat + interval
  const allowAt = newTat - periodMs
  if (allowAt > now + epsilon) {
    return { allowed: false, tat, remaining: 0, resetMs: Math.ceil(tat - now), retryAfterMs: Math.ceil(allowAt - now) }
  }
  return {
    allowed: true,
    tat: newTat,
    remaining: Math.floor((periodMs - (newTat - now)) / interval + epsilon),
    resetMs: Math.ceil(newTat - now),
    retryAfterMs: 0
  }
}

/**
 * KEYS[1]: the bucket; ARGV[1]: limit; ARGV[2]: period in ms. Uses the Redis
 * clock, so every API instance agrees on "now". Returns
 * {allowed, remaining, resetMs, retryAfterMs}. The key expires when its tat passes.
 */
export const redisScript = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000
local limit = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
local interval = period / limit
local tat = tonumber(redis.call('GET', KEYS[1]))
if tat == nil or tat < now then tat = now end
local new_tat = tat + interval
local allow_at = new_tat - period
if allow_at > now + 1e-6 then
  return {0, 0, math.ceil(tat - now), math.ceil(allow_at - now)}
end
redis.call('SET', KEYS[1], string.format('%.3f', new_tat), 'PX', math.max(1, math.ceil(new_tat - now)))
return {1, math.floor((period - (new_tat - now)) / interval + 1e-6), math.ceil(new_tat - now), 0}
`
