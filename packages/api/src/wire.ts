/**
 * The widget API's requests, answers and error bodies as JSON, written as
 * plain TypeScript so that the thin client's declarations (the package's root,
 * `@hearken/api`) name nothing from `effect`: a consumer without it still gets
 * exact types, not `any`. `wire-check.ts` proves, at compile time, that each
 * is exactly what the API definition (`Api.ts`) derives, so they cannot drift.
 */

/** ISO 8601 UTC with milliseconds: `2026-01-01T00:00:00.000Z`. */
export type Timestamp = string

export type Board = {
  readonly id: string
  /** Plain text: escape it when you render it. */
  readonly name: string
  readonly slug: string
  readonly organizationId: string
  readonly createdAt: Timestamp
  readonly updatedAt: Timestamp
}

export type Update = {
  readonly id: string
  /** Plain text. */
  readonly title: string
  readonly slug: string
  /** HTML sanitized by the server: the only field of any answer meant to be rendered as HTML. */
  readonly content: string
  /** Plain text. */
  readonly excerpt: string
  readonly imageUrl: string | null
  readonly publishedAt: Timestamp
}

export type SuggestionMatch = {
  readonly id: string
  /** Plain text. */
  readonly title: string
  /** Plain text. */
  readonly excerpt: string
  readonly slug: string
}

export type CreatedPost = {
  readonly id: string
  readonly slug: string
  /** Plain text, as submitted. */
  readonly title: string
  readonly boardId: string
  readonly organizationId: string
  readonly createdAt: Timestamp
}

export type OrganizationQuery = {
  readonly organizationId: string
}

export type SuggestionsRequest = {
  readonly organizationId: string
  readonly boardId: string
  readonly title: string
  readonly content: string
}

export type FeedbackRequest = {
  readonly organizationId: string
  readonly boardId: string
  readonly title: string
  readonly content: string
  /** Up to 20 properties; keys up to 64 and values up to 500 code points. */
  readonly metadata?: { readonly [key: string]: string }
  /** An HS256 identity JWT signed by the host's backend. */
  readonly token?: string
}

/** An error body: its `_tag`, and a message that says what was wrong where the server has one. */
type ErrorBody<Tag extends string> = {
  readonly _tag: Tag
  readonly message?: string
}

/** The error bodies, discriminated by `_tag`. */
export type DataValidationError = ErrorBody<"DataValidationError">
export type UnauthorizedError = ErrorBody<"UnauthorizedError">
export type NotFoundError = ErrorBody<"NotFoundError">
export type RateLimitExceededError = ErrorBody<"RateLimitExceededError">
export type RateLimitUnavailableError = ErrorBody<"RateLimitUnavailableError">
/** A 500: its message always, and the trace's id as `detail` when traces are on. */
export type InternalServerError = {
  readonly _tag: "InternalServerError"
  readonly message: string
  readonly detail?: string
}

/** What every widget endpoint may answer: bad input, a server failure, and the rate limiter's two. */
type EveryEndpointError = DataValidationError | InternalServerError | RateLimitExceededError | RateLimitUnavailableError

/** Each widget endpoint: its method and path, query or body, 200 answer and error bodies. */
export type WidgetEndpoints = {
  readonly boards: {
    readonly method: "GET"
    readonly path: "/api/widget/v1/boards"
    readonly query: OrganizationQuery
    readonly payload: never
    readonly success: ReadonlyArray<Board>
    readonly error: EveryEndpointError
  }
  readonly updates: {
    readonly method: "GET"
    readonly path: "/api/widget/v1/updates"
    readonly query: OrganizationQuery
    readonly payload: never
    readonly success: ReadonlyArray<Update>
    readonly error: EveryEndpointError
  }
  readonly suggestions: {
    readonly method: "POST"
    readonly path: "/api/widget/v1/suggestions"
    readonly query: never
    readonly payload: SuggestionsRequest
    readonly success: ReadonlyArray<SuggestionMatch>
    readonly error: EveryEndpointError
  }
  readonly feedback: {
    readonly method: "POST"
    readonly path: "/api/widget/v1/feedback"
    readonly query: never
    readonly payload: FeedbackRequest
    readonly success: CreatedPost
    readonly error: EveryEndpointError | NotFoundError | UnauthorizedError
  }
}
