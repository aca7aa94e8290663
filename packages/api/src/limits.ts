/**
 * The API's numbers as plain data, with no runtime dependency: the field
 * limits the schemas check, how many suggestions an answer holds, and the
 * rate limits. The server, the OpenAPI document and browsers (through
 * `@hearken/api/thin`) read them here, so each has one source. docs/api.md:
 * "Limits" and "Rate limits".
 */

/**
 * Field limits; lengths count Unicode code points. `id`: any identifier a
 * request names (`organizationId`, `boardId`), and any a fixture imports, so
 * that every stored id can be asked for (decision 0025). `suggestions`: the
 * most posts one answer suggests.
 */
export const Limits = {
  id: 200,
  title: 200,
  content: 20_000,
  metadataProperties: 20,
  metadataKey: 64,
  metadataValue: 500,
  token: 8_192,
  suggestions: 5
} as const

/**
 * A character that shows: not white space, not a control, format or private
 * character, not a lone combining mark, not a default-ignorable code point
 * (zero-width spaces and joiners, U+FEFF, the Hangul fillers…) and not a
 * blank that only looks like a glyph (U+2800 BRAILLE PATTERN BLANK). A
 * feedback title must hold one; the widget checks it before sending.
 */
export const visibleCharacter = /[^\p{White_Space}\p{Default_Ignorable_Code_Point}\p{C}\p{M}\u2800]/u

/** What a title without a visible character is refused as: `title: Expected a title containing …`. */
export const visibleTitleExpected = "a title containing a visible character"

/**
 * The widget endpoints by identifier. `Api.ts` checks, at compile time, that
 * they are exactly the widget group's: an endpoint added or renamed without
 * its limit does not compile.
 */
export type WidgetEndpoint = "suggestions" | "feedback" | "boards" | "updates"

/**
 * What a client IP is limited on: each widget endpoint, and `docs`, the API
 * reference (`GET /docs` and `GET /docs/openapi.json`, one budget for both).
 */
export type RateLimitedEndpoint = WidgetEndpoint | "docs"

/** Every rate limit counts requests over this window: a minute. */
export const rateLimitWindowMs = 60_000

/** Requests per window (a minute) per client IP, by endpoint; the OpenAPI descriptions quote it. */
export const RateLimits: { readonly [Endpoint in RateLimitedEndpoint]: number } = {
  boards: 120,
  updates: 120,
  feedback: 20,
  suggestions: 5,
  // A person reads the reference a few times; /docs, its 3 MB script and the document share it (decisions 0016, 0035).
  docs: 30
}

