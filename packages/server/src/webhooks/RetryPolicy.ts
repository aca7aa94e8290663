/** What one attempt came to, as the transport saw it. */
export type AttemptResult =
  | { readonly _tag: "Answered"; readonly status: number; readonly retryAfter: string | undefined; readonly excerpt: string }
  | { readonly _tag: "NetworkError"; readonly message: string }
  | { readonly _tag: "TimedOut"; readonly afterMs: number }
  | { readonly _tag: "Refused"; readonly reason: string }

export type Verdict =
  | { readonly _tag: "Succeeded" }
  | { readonly _tag: "Retry"; readonly delayMs: number; readonly reason: string }
  | { readonly _tag: "Failed"; readonly reason: string }

export interface RetryPolicy {
  readonly maxAttempts: number
  readonly baseMs: number
}

/** No backoff grows past a day, and no `Retry-After` is honoured past an hour. */
export const maxBackoffMs = 24 * 60 * 60_000
export const maxRetryAfterMs = 60 * 60_000

/**
 * `Retry-After` as milliseconds from `nowMs`: delay-seconds or an HTTP date
 * (RFC 9110 §10.2.3). Anything else is ignored.
 */
export const parseRetryAfter = (value: string | undefined, nowMs: number): number | undefined => {
  if (value === undefined) return undefined
  const text = value.trim()
  if (/^\d+$/.test(text)) return Number(text) * 1000
  const date = Date.parse(text)
  return /[a-z]/i.test(text) && !Number.isNaN(date) ? Math.max(0, date - nowMs) : undefined
}

/**
 * Exponential backoff with full jitter: uniform in [0, base × 2^(attempt−1)),
 * capped; a `Retry-After` the receiver sent is a floor, itself capped.
 * `random` is in [0, 1).
 */
export const backoffMs = (policy: RetryPolicy, attempt: number, random: number, retryAfterMs: number | undefined) => {
  const ceiling = Math.min(policy.baseMs * 2 ** (attempt - 1), maxBackoffMs)
  const jittered = Math.floor(random * ceiling)
  return retryAfterMs === undefined ? jittered : Math.max(jittered, Math.min(retryAfterMs, maxRetryAfterMs))
}

const retryable = (status: number) => status === 408 || status === 429 || status >= 500

const describe = (result: AttemptResult): string => {
  switch (result._tag) {
    case "Answered":
      return result.status >= 300 && result.status < 400
        ? `HTTP ${result.status}: redirects are not followed`
        : `HTTP ${result.status}`
    case "NetworkError":
      return `network error: ${result.message}`
    case "TimedOut":
      return `no answer within ${result.afterMs} ms`
    case "Refused":
      return `refused: ${result.reason}`
  }
}

/**
 * 2xx succeeds. A network error, a timeout, 408, 429 or 5xx is retried until
 * `attempt` reaches `maxAttempts`. Any other answer, and a refused address,
 * fails at once.
 */
export const judge = (
  policy: RetryPolicy,
  attempt: number,
  result: AttemptResult,
  random: number,
  nowMs: number
): Verdict => {
  if (result._tag === "Answered" && result.status >= 200 && result.status < 300) return { _tag: "Succeeded" }
  const reason = describe(result)
  const transient = result._tag === "NetworkError" || result._tag === "TimedOut" ||
    (result._tag === "Answered" && retryable(result.status))
  if (!transient) return { _tag: "Failed", reason }
  if (attempt >= policy.maxAttempts) return { _tag: "Failed", reason: `${reason} (after ${attempt} attempts)` }
  const retryAfter = result._tag === "Answered" ? parseRetryAfter(result.retryAfter, nowMs) : undefined
  return { _tag: "Retry", delayMs: backoffMs(policy, attempt, random, retryAfter), reason }
}
