/**
 * The thin typed client, the package's root (`@hearken/api`; `@hearken/api/thin`
 * is the same module): `fetch` and nothing else at run time, for browsers,
 * widgets and servers alike. Its types are the plain ones of `wire.ts`, which
 * `wire-check.ts` proves equal to what the API definition (`WidgetGroup` in
 * `Api.ts`) derives; so neither its code nor its declarations need `effect`.
 */
import type { WidgetEndpoints } from "./wire.js"

export { Limits, RateLimits, rateLimitWindowMs, visibleCharacter, visibleTitleExpected, type RateLimitedEndpoint } from "./limits.js"
export type {
  Board,
  CreatedPost,
  DataValidationError,
  FeedbackRequest,
  InternalServerError,
  NotFoundError,
  OrganizationQuery,
  RateLimitExceededError,
  RateLimitUnavailableError,
  SuggestionMatch,
  SuggestionsRequest,
  Timestamp,
  UnauthorizedError,
  Update,
  WidgetEndpoints
} from "./wire.js"

/** The widget endpoints' identifiers: `boards`, `updates`, `suggestions`, `feedback`. */
export type EndpointId = keyof WidgetEndpoints

/** What an endpoint takes in its query string or body, and answers on 200, as JSON. */
export type Query<Id extends EndpointId> = WidgetEndpoints[Id]["query"]
export type Payload<Id extends EndpointId> = WidgetEndpoints[Id]["payload"]
export type Success<Id extends EndpointId> = WidgetEndpoints[Id]["success"]

/** The errors an endpoint (with its middlewares) may answer, as JSON: a union discriminated by `_tag`. */
export type ServerError<Id extends EndpointId> = WidgetEndpoints[Id]["error"]

/** A refused or failed call. 429 and 503 carry `Retry-After` in seconds; `NetworkError` is the browser's (offline, CORS). */
export type ClientError<Id extends EndpointId> =
  | Exclude<ServerError<Id>, { readonly _tag: "RateLimitExceededError" | "RateLimitUnavailableError" }>
  | (Extract<ServerError<Id>, { readonly _tag: "RateLimitExceededError" | "RateLimitUnavailableError" }> & {
    readonly retryAfterSeconds: number
  })
  | { readonly _tag: "NetworkError"; readonly message: string }

export type Answer<Id extends EndpointId> =
  | { readonly ok: true; readonly value: Success<Id>; readonly etag: string | undefined }
  | { readonly ok: false; readonly error: ClientError<Id>; readonly status: number }

/** `GET /boards` and `GET /updates` may also answer 304 to a tag the caller already has. */
export type CachedAnswer<Id extends EndpointId> = Answer<Id> | { readonly ok: true; readonly notModified: true; readonly etag: string }

/** Method and path of every widget endpoint: a wrong or missing one does not compile. */
export const routes: { readonly [Id in EndpointId]: { readonly method: WidgetEndpoints[Id]["method"]; readonly path: WidgetEndpoints[Id]["path"] } } = {
  suggestions: { method: "POST", path: "/api/widget/v1/suggestions" },
  feedback: { method: "POST", path: "/api/widget/v1/feedback" },
  boards: { method: "GET", path: "/api/widget/v1/boards" },
  updates: { method: "GET", path: "/api/widget/v1/updates" }
}

/**
 * The headers a browser must be let to send or read cross-origin. The thin
 * client names the headers it sends and reads from these lists, and the
 * server's CORS middleware (`Edge.ts`) allows and exposes exactly them, so the
 * two cannot drift: a header the client sends that the preflight does not
 * allow makes the browser refuse the whole request (decision 0015).
 * They live here so that this module imports nothing at run time.
 *
 * `requestHeaders`: what the clients send outside the CORS safelist; the
 * preflight allows exactly these.
 */
export const requestHeaders = {
  /** `application/json` bodies on the POSTs. */
  contentType: "content-type",
  /** Revalidating `GET /boards` and `GET /updates` (decision 0010). */
  ifNoneMatch: "if-none-match",
  /** `POST /feedback` retries (docs/api.md: "Retries: Idempotency-Key"). */
  idempotencyKey: "idempotency-key"
} as const

export type RequestHeader = typeof requestHeaders[keyof typeof requestHeaders]

/** Response headers the thin client reads; the server exposes these (and a few more for other clients). */
export const responseHeaders = {
  etag: "etag",
  /** On 429 and 503. */
  retryAfter: "retry-after"
} as const

export interface RequestOptions {
  readonly signal?: AbortSignal | undefined
}

export interface ThinClient {
  readonly boards: (query: Query<"boards">, options?: RequestOptions & { readonly ifNoneMatch?: string | undefined }) => Promise<CachedAnswer<"boards">>
  readonly updates: (query: Query<"updates">, options?: RequestOptions & { readonly ifNoneMatch?: string | undefined }) => Promise<CachedAnswer<"updates">>
  readonly suggestions: (payload: Payload<"suggestions">, options?: RequestOptions) => Promise<Answer<"suggestions">>
  /** With `idempotencyKey`, a retry never creates a second post (docs/api.md: "Retries: Idempotency-Key"). */
  readonly feedback: (payload: Payload<"feedback">, options?: RequestOptions & { readonly idempotencyKey?: string | undefined }) => Promise<Answer<"feedback">>
}

/**
 * A client for the server at `baseUrl` (its origin, e.g.
 * `https://feedback.example.com`). It never throws: every outcome is an
 * `Answer`.
 */
export const makeThinClient = (baseUrl: string, options: { readonly fetch?: typeof fetch } = {}): ThinClient => {
  const send = options.fetch ?? ((input, init) => fetch(input, init))
  const call = async (
    id: EndpointId,
    parts: {
      readonly query?: Readonly<Record<string, string>>
      readonly payload?: unknown
      /** Only headers the server's CORS preflight allows: a browser refuses any other. */
      readonly headers?: Partial<Record<RequestHeader, string>>
      readonly signal?: AbortSignal | undefined
    }
  ): Promise<any> => {
    const url = new URL(routes[id].path, baseUrl)
    for (const [key, value] of Object.entries(parts.query ?? {})) url.searchParams.set(key, value)
    let response: Response
    try {
      response = await send(url, {
        method: routes[id].method,
        headers: parts.payload === undefined ? parts.headers ?? {} : { [requestHeaders.contentType]: "application/json", ...parts.headers },
        body: parts.payload === undefined ? null : JSON.stringify(parts.payload),
        signal: parts.signal ?? null
      })
    } catch (error) {
      return { ok: false, status: 0, error: { _tag: "NetworkError", message: error instanceof Error ? error.message : String(error) } }
    }
    const etag = response.headers.get(responseHeaders.etag) ?? undefined
    if (response.status === 304) return { ok: true, notModified: true, etag }
    const body = await response.json().catch(() => undefined)
    if (response.ok) return { ok: true, value: body, etag }
    const error = typeof body?._tag === "string"
      ? body
      : { _tag: "InternalServerError", message: `HTTP ${response.status}` }
    if (response.status === 429 || response.status === 503) {
      error.retryAfterSeconds = Number(response.headers.get(responseHeaders.retryAfter)) || 1
    }
    return { ok: false, status: response.status, error }
  }
  const conditional = (ifNoneMatch: string | undefined) =>
    ifNoneMatch === undefined ? {} : { [requestHeaders.ifNoneMatch]: ifNoneMatch }
  return {
    boards: (query, options) => call("boards", { query, headers: conditional(options?.ifNoneMatch), signal: options?.signal }),
    updates: (query, options) => call("updates", { query, headers: conditional(options?.ifNoneMatch), signal: options?.signal }),
    suggestions: (payload, options) => call("suggestions", { payload, signal: options?.signal }),
    feedback: (payload, options) =>
      call("feedback", {
        payload,
        headers: options?.idempotencyKey === undefined ? {} : { [requestHeaders.idempotencyKey]: options.idempotencyKey },
        signal: options?.signal
      })
  }
}
