import { Schema } from "effect"

export { Limits, RateLimits, rateLimitWindowMs, visibleCharacter, visibleTitleExpected, type RateLimitedEndpoint, type WidgetEndpoint } from "./limits.js"
import { Limits, visibleCharacter, visibleTitleExpected } from "./limits.js"

/** PostgreSQL cannot store U+0000 in text, so no request string may carry it. */
const noNul = Schema.makeFilter<string>((s) => !s.includes("\u0000"), { expected: "a string without NUL (U+0000) characters" })

/**
 * JSON can carry a lone UTF-16 surrogate (`"\ud800"`), which is no character:
 * PostgreSQL refuses it in jsonb and UTF-8 encoding would silently turn it
 * into U+FFFD. Refused, never replaced.
 */
/** In a `u` regex a pair is one code point, so only an unpaired surrogate is of category Cs. */
const loneSurrogate = /\p{Cs}/u
export const isWellFormed = (s: string) => !loneSurrogate.test(s)
const wellFormed = Schema.makeFilter<string>(isWellFormed, { expected: "a string without lone UTF-16 surrogates" })

/** Every string a client sends. */
export const RequestString = Schema.String.check(noNul, wellFormed)

/**
 * An identifier: at most `Limits.id` code points, as every stored one is
 * (decision 0025). The length is checked first, so an id too long is refused
 * without reading it to the end.
 */
export const Id = Schema.String.check(
  Schema.isMaxCodePoints(Limits.id),
  // On a check that shows in JSON Schema: one that does not (`wellFormed`) would take the description with it.
  Schema.isNonEmpty({ description: `An identifier: 1 to ${Limits.id} characters.` }),
  noNul,
  wellFormed
)

/** `YYYY-MM-DDTHH:mm:ss.sssZ` (ISO 8601, UTC, milliseconds). */
export const Timestamp = Schema.String.annotate({
  format: "date-time",
  description: "ISO 8601 UTC timestamp with milliseconds",
  examples: ["2026-01-01T00:00:00.000Z"]
})

const maxCodePoints = (n: number) => RequestString.check(Schema.isMaxCodePoints(n))

/**
 * The OpenAPI document states each limit and pattern in words beside it
 * (issue 29), for readers of `/docs` and of generated clients: a length
 * counts characters as Unicode code points, as every limit here does.
 */
const atMost = (n: number) => `At most ${n.toLocaleString("en-US")} characters.`

export const Title = maxCodePoints(Limits.title).annotate({ description: atMost(Limits.title) })
export const Content = maxCodePoints(Limits.content).annotate({ description: atMost(Limits.content) })

/** A feedback title must say something: at least one visible character. */
export const FeedbackTitle = maxCodePoints(Limits.title).check(
  Schema.isPattern(visibleCharacter, { expected: visibleTitleExpected })
).annotate({
  description: `${atMost(Limits.title)} At least one of them must show: a title of only spaces, invisible ` +
    "or control characters is refused (the pattern finds one visible character)."
})

/**
 * A string-keyed record from a client. Keys are checked on the record itself:
 * a key schema on `Schema.Record` silently drops a key that fails it, which
 * would lose data instead of refusing it. No key may contain U+0000, and none
 * may be longer than `maxKeyCodePoints` when given.
 */
export const ClientRecord = <Value extends Schema.Top>(value: Value, maxKeyCodePoints?: number) =>
  Schema.Record(Schema.String, value).check(Schema.makeFilter<Readonly<Record<string, unknown>>>(
    (record) => {
      for (const key of Object.keys(record)) {
        if (key.includes("\u0000")) return "Expected keys without NUL (U+0000) characters"
        if (!isWellFormed(key)) return "Expected keys without lone UTF-16 surrogates"
        if (maxKeyCodePoints !== undefined && Array.from(key).length > maxKeyCodePoints) {
          return `Expected keys of at most ${maxKeyCodePoints} code points`
        }
      }
      return true
    },
    {
      expected: "keys without NUL characters or lone surrogates" + (maxKeyCodePoints === undefined ? "" : `, of at most ${maxKeyCodePoints} code points`),
      toJsonSchema: () => ({
        propertyNames: {
          type: "string",
          ...(maxKeyCodePoints === undefined ? {} : { maxLength: maxKeyCodePoints, description: `A key: ${atMost(maxKeyCodePoints)}` })
        }
      })
    }
  ))

export const Metadata = ClientRecord(
  maxCodePoints(Limits.metadataValue).annotate({ description: `A value: ${atMost(Limits.metadataValue)}` }),
  Limits.metadataKey
)
  .check(Schema.isMaxProperties(Limits.metadataProperties))
  .annotate({
    description: `Strings by string, stored with the post: at most ${Limits.metadataProperties} properties, ` +
      `keys of at most ${Limits.metadataKey} characters, values of at most ${Limits.metadataValue}.`
  })

export const IdentityToken = maxCodePoints(Limits.token).annotate({
  description: `HS256 identity JWT signed with the organization's secret. ${atMost(Limits.token)}`
})

/** Text a client must escape, never insert as HTML (docs/api.md: "Fields"). */
const PlainText = (what: string) =>
  Schema.String.annotate({ description: `${what}: plain text, not HTML. Escape it when you render it; never insert it as HTML.` })

/**
 * A class's fields as a struct of the class's name. OpenAPI components show a
 * schema's encoded side, and Effect names an encoded side that has no
 * identifier of its own after its type, plus `Encoded` (`BoardEncoded`,
 * `internal/schema/toRepresentation.ts`). Generated clients took that name
 * (issue 29); naming the struct too makes the component `Board`.
 */
const named = <const Fields extends Schema.Struct.Fields>(identifier: string, fields: Fields) =>
  Schema.Struct(fields).annotate({ identifier })

export class Board extends Schema.Class<Board>("Board")(named("Board", {
  id: Schema.String,
  name: PlainText("The board's name"),
  slug: Schema.String,
  organizationId: Schema.String,
  createdAt: Timestamp,
  updatedAt: Timestamp
})) {}

export class SuggestionMatch extends Schema.Class<SuggestionMatch>("SuggestionMatch")(named("SuggestionMatch", {
  id: Schema.String,
  title: PlainText("The post's title"),
  excerpt: PlainText("The start of the post's text"),
  slug: Schema.String
})) {}

export class CreatedPost extends Schema.Class<CreatedPost>("CreatedPost")(named("CreatedPost", {
  id: Schema.String,
  slug: Schema.String,
  title: PlainText("The title as submitted"),
  boardId: Schema.String,
  organizationId: Schema.String,
  createdAt: Timestamp
})) {}

export class Update extends Schema.Class<Update>("Update")(named("Update", {
  id: Schema.String,
  title: PlainText("The entry's title"),
  slug: Schema.String,
  content: Schema.String.annotate({
    description: "HTML, sanitized by the server (an allow-list: formatting, lists, links with safe rel, " +
      "http(s) images): the only field of any answer meant to be rendered as HTML."
  }),
  excerpt: PlainText("A plain-text excerpt"),
  imageUrl: Schema.NullOr(Schema.String),
  publishedAt: Timestamp
})) {}

export const OrganizationQuery = { organizationId: Id }

export const SuggestionsRequest = Schema.Struct({
  organizationId: Id,
  boardId: Id,
  title: Title,
  content: Content
}).annotate({ identifier: "SuggestionsRequest" })
export type SuggestionsRequest = typeof SuggestionsRequest.Type

export const FeedbackRequest = Schema.Struct({
  organizationId: Id,
  boardId: Id,
  title: FeedbackTitle,
  content: Content,
  metadata: Schema.optionalKey(Metadata),
  token: Schema.optionalKey(IdentityToken)
}).annotate({ identifier: "FeedbackRequest" })
export type FeedbackRequest = typeof FeedbackRequest.Type

/** `Idempotency-Key` (docs/api.md: "Retries: Idempotency-Key"): 1 to 255 visible ASCII characters. */
export const idempotencyKeyPattern = /^[\x21-\x7e]{1,255}$/
export const IdempotencyKey = Schema.String.check(
  Schema.isPattern(idempotencyKeyPattern, { expected: "1 to 255 visible ASCII characters" })
).annotate({
  description: "1 to 255 visible ASCII characters (codes 33 to 126: letters, digits and punctuation, no spaces), " +
    "e.g. a UUID. Makes retries safe: a repeat with the same key and the same body, within 24 hours and from any " +
    "address, answers the first response and creates nothing; the same key with another body is 400. " +
    "Scoped by organizationId. Only a created post is remembered: a failed request leaves the key free."
})

export const Health = Schema.Struct({ status: Schema.Literal("ok") }).annotate({ identifier: "Health" })
