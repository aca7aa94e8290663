import { RateLimits, rateLimitWindowMs } from "@hearken/api/thin"

/**
 * When to ask for similar posts. `POST /suggestions` allows
 * `RateLimits.suggestions` (5) requests a minute per IP, one every 12 s once
 * the burst is spent, so the widget asks only after a pause in typing, at
 * most once every `minIntervalMs`, never more than `maxPerWindow` times in
 * any `windowMs`, never twice for the same draft, and after a 429 or 503 not
 * before its `Retry-After`. The defaults come from the API's rate-limit table.
 */
export interface SchedulerOptions {
  /** The draft's identity, or `undefined` when there is nothing worth asking about yet. */
  readonly draftKey: () => string | undefined
  /** Sends the request; resolves to `Retry-After` seconds when the server refused it for now. */
  readonly request: () => Promise<number | undefined>
  readonly pauseMs?: number
  readonly minIntervalMs?: number
  readonly maxPerWindow?: number
  readonly windowMs?: number
}

export class SuggestionScheduler {
  private readonly pauseMs: number
  private readonly minIntervalMs: number
  private readonly maxPerWindow: number
  private readonly windowMs: number
  /** Start times of the requests sent in the last `windowMs`. */
  private sent: Array<number> = []
  private lastKey: string | undefined
  private blockedUntil = 0
  private timer: ReturnType<typeof setTimeout> | undefined
  private inFlight = false

  constructor(private readonly options: SchedulerOptions) {
    this.pauseMs = options.pauseMs ?? 700
    this.maxPerWindow = options.maxPerWindow ?? RateLimits.suggestions
    this.windowMs = options.windowMs ?? rateLimitWindowMs
    this.minIntervalMs = options.minIntervalMs ?? this.windowMs / this.maxPerWindow
  }

  /** The earliest time a request may leave, typing aside. */
  private earliest(now: number): number {
    this.sent = this.sent.filter((t) => t > now - this.windowMs)
    const last = this.sent.at(-1)
    let at = Math.max(now, this.blockedUntil)
    if (last !== undefined) at = Math.max(at, last + this.minIntervalMs)
    if (this.sent.length >= this.maxPerWindow) at = Math.max(at, this.sent[this.sent.length - this.maxPerWindow]! + this.windowMs)
    return at
  }

  /** The draft changed: (re)start the pause. */
  changed(): void {
    clearTimeout(this.timer)
    this.timer = undefined
    const key = this.options.draftKey()
    if (key === undefined || key === this.lastKey) return
    const now = Date.now()
    this.timer = setTimeout(() => void this.fire(), Math.max(now + this.pauseMs, this.earliest(now)) - now)
  }

  private async fire(): Promise<void> {
    this.timer = undefined
    if (this.inFlight) return // `changed()` runs again when it settles
    const key = this.options.draftKey()
    if (key === undefined || key === this.lastKey) return
    const now = Date.now()
    if (this.earliest(now) > now) return this.changed()
    this.inFlight = true
    this.sent.push(now)
    this.lastKey = key
    try {
      const retryAfter = await this.options.request()
      if (retryAfter !== undefined) {
        this.blockedUntil = Date.now() + retryAfter * 1000
        this.lastKey = undefined // not answered: ask again once allowed
      }
    } catch {
      this.lastKey = undefined
    } finally {
      this.inFlight = false
    }
    this.changed()
  }

  /** Forget the pending request (after a post, or when the widget goes away). The budget is kept. */
  reset(): void {
    clearTimeout(this.timer)
    this.timer = undefined
    this.lastKey = undefined
  }
}
