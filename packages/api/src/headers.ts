/**
 * The HTTP headers of the widget API that a browser must be let to send or
 * read cross-origin. One list, with no run-time imports (browser-safe): the
 * thin client names the headers it sends and reads from it, and the server's
 * CORS middleware allows and exposes exactly these, so the two cannot drift.
 * A header the client sends that the preflight does not allow makes the
 * browser refuse the whole request (issue 18, decision 0015).
 */

/** Request headers outside the CORS safelist the clients send; the preflight allows exactly these. */
export const requestHeaders = {
  /** `application/json` bodies on the POSTs. */
  contentType: "content-type",
  /** Revalidating `GET /boards` and `GET /updates` (decision 0010). */
  ifNoneMatch: "if-none-match",
  /** `POST /feedback` retries (CONTRACT §4). */
  idempotencyKey: "idempotency-key"
} as const

export type RequestHeader = typeof requestHeaders[keyof typeof requestHeaders]

/** Response headers the thin client reads; the server exposes these (and a few more for other clients). */
export const responseHeaders = {
  etag: "etag",
  /** On 429 and 503. */
  retryAfter: "retry-after"
} as const
