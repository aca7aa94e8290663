import { Schema, SchemaAST } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, OpenApi } from "effect/http-api"
import {
  DataValidationError,
  InternalServerError,
  NotFoundError,
  RateLimitExceededError,
  RateLimitUnavailableError,
  UnauthorizedError
} from "./errors.js"
import {
  Board,
  CreatedPost,
  FeedbackRequest,
  Health,
  IdempotencyKey,
  idempotencyKeyPattern,
  OrganizationQuery,
  type RateLimitedEndpoint,
  Limits,
  RateLimits,
  SuggestionMatch,
  SuggestionsRequest,
  Update,
  type WidgetEndpoint
} from "./schemas.js"
import { openApiWebhooks } from "./webhooks.js"

/** The prefix every widget route lives under; it carries the version (docs/api.md: "Routes"). */
export const widgetPrefix = "/api/widget/v1"

/**
 * Turns request decoding failures into `DataValidationError` and unexpected
 * failures into `InternalServerError`, so every endpoint declares both.
 * Clients need no implementation of it.
 */
export class RequestErrors extends HttpApiMiddleware.Service<RequestErrors>()("hearken/RequestErrors", {
  error: [DataValidationError, InternalServerError]
}) {}

/**
 * Per-client-IP limits (docs/api.md: "Limits"). It runs before anything else
 * on a widget route, so every request counts, whatever its body.
 */
export class RateLimit extends HttpApiMiddleware.Service<RateLimit>()("hearken/RateLimit", {
  error: [RateLimitExceededError, RateLimitUnavailableError]
}) {}

const integerHeader = (description: string) => ({ description, schema: { type: "integer", minimum: 0 } })

const rateLimitHeaders = {
  "RateLimit-Limit": integerHeader("Requests allowed per minute for this endpoint and client IP"),
  "RateLimit-Remaining": integerHeader("Requests left right now"),
  "RateLimit-Reset": integerHeader("Seconds until the full budget is available again")
}
const retryAfter = { "Retry-After": integerHeader("Seconds to wait before retrying") }

/** How long a cache may reuse a `GET /boards` or `GET /updates` answer before revalidating it (docs/api.md: "Caching: ETag and 304"). */
export const publicMaxAgeSeconds = 10

const cachingHeaders = {
  ETag: { description: "The answer's tag; send it back in If-None-Match to revalidate", schema: { type: "string" } },
  "Cache-Control": { description: `public, max-age=${publicMaxAgeSeconds}`, schema: { type: "string" } }
}

/** Conditional requests on the cacheable lists: the request header, the tag on 200, and 304. */
const documentConditional = (operation: Record<string, any>) => {
  operation["parameters"] = [...(operation["parameters"] ?? []), {
    name: "If-None-Match",
    in: "header",
    required: false,
    description: "One tag, a list of tags, or *. If one matches the current answer, the answer is 304 with no body.",
    schema: { type: "string" }
  }]
  const responses = operation["responses"] ?? {}
  responses["200"] = { ...responses["200"], headers: { ...responses["200"]?.["headers"], ...cachingHeaders } }
  responses["304"] = { description: "Not Modified: the tag sent still names the current answer", headers: { ...cachingHeaders } }
  operation["responses"] = responses
}

/**
 * `Idempotency-Key` on `POST /feedback`. It is read by the handler rather than
 * declared on the endpoint: a declared header would make every typed-client
 * call pass `headers`, breaking the widget's calls for an optional feature.
 */
const documentIdempotency = (operation: Record<string, any>) => {
  operation["parameters"] = [...(operation["parameters"] ?? []), {
    name: "Idempotency-Key",
    in: "header",
    required: false,
    // On the pattern's check, where `.annotate` after `.check` puts it: `ast.annotations` has none.
    description: SchemaAST.resolveDescription(IdempotencyKey.ast),
    schema: { type: "string", minLength: 1, maxLength: 255, pattern: idempotencyKeyPattern.source }
  }]
}

/**
 * What the generated document cannot know: the rate-limit headers that
 * `RateLimit` puts on every widget response, that request bodies may carry
 * unknown fields (they are ignored, docs/api.md: "Fields"), which Effect would render as
 * `additionalProperties: false`, and the `feedback.post.created` webhook
 * (OpenAPI 3.1 top-level `webhooks`), derived from the schema the worker
 * encodes with.
 */
const completeDocument = (spec: Record<string, any>) => {
  for (const name of ["FeedbackRequest", "SuggestionsRequest"]) {
    const schema = spec["components"]?.["schemas"]?.[name]
    if (schema?.["additionalProperties"] === false) delete schema["additionalProperties"]
  }
  for (const [path, item] of Object.entries<Record<string, any>>(spec["paths"] ?? {})) {
    if (!path.startsWith(widgetPrefix)) continue
    if (path === `${widgetPrefix}/boards` || path === `${widgetPrefix}/updates`) documentConditional(item["get"])
    if (path === `${widgetPrefix}/feedback`) documentIdempotency(item["post"])
    for (const operation of Object.values<Record<string, any>>(item)) {
      for (const [status, response] of Object.entries<Record<string, any>>(operation["responses"] ?? {})) {
        response["headers"] = {
          ...response["headers"],
          ...(status === "503" ? {} : rateLimitHeaders),
          ...(status === "429" || status === "503" ? retryAfter : {})
        }
      }
    }
  }
  const { schemas, webhooks } = openApiWebhooks()
  spec["components"] = { ...spec["components"], schemas: { ...spec["components"]?.["schemas"], ...schemas } }
  spec["webhooks"] = webhooks
  return spec
}

/**
 * The OpenAPI operationIds, by endpoint: verb and noun, valid identifiers in
 * every language a generator writes (issue 29). Effect's default is
 * `group.endpoint` (`widget.boards`), which generators turn into awkward
 * names or refuse. The typed client's method names stay the endpoints' own.
 */
const operationIds = {
  suggestions: "suggestPosts",
  feedback: "createFeedback",
  boards: "listBoards",
  updates: "listUpdates",
  health: "getHealth"
} as const satisfies Record<WidgetEndpoint | "health", string>

const rateLimitOf = (endpoint: RateLimitedEndpoint) => `Rate limit: ${RateLimits[endpoint]} per minute per IP.`

export class WidgetGroup extends HttpApiGroup.make("widget")
  .add(
    HttpApiEndpoint.post("suggestions", "/suggestions", {
      payload: SuggestionsRequest,
      success: Schema.Array(SuggestionMatch).check(Schema.isMaxLength(Limits.suggestions))
        .annotate({ description: `At most ${Limits.suggestions} posts, possibly none.` })
    }).annotateMerge(OpenApi.annotations({
      identifier: operationIds.suggestions,
      summary: "Suggest similar public posts for a draft",
      description: `Up to five public posts of the board similar to the draft. ${rateLimitOf("suggestions")}`
    })),
    HttpApiEndpoint.post("feedback", "/feedback", {
      payload: FeedbackRequest,
      success: CreatedPost,
      error: [NotFoundError, UnauthorizedError]
    }).annotateMerge(OpenApi.annotations({
      identifier: operationIds.feedback,
      summary: "Create a feedback post on a public board",
      description: rateLimitOf("feedback")
    })),
    HttpApiEndpoint.get("boards", "/boards", {
      query: OrganizationQuery,
      success: Schema.Array(Board)
    }).annotateMerge(OpenApi.annotations({
      identifier: operationIds.boards,
      summary: "List the organization's public boards",
      description: `Ordered by createdAt, then id. Conditional: ETag, If-None-Match (304), Cache-Control max-age ${publicMaxAgeSeconds}. ${rateLimitOf("boards")}`
    })),
    HttpApiEndpoint.get("updates", "/updates", {
      query: OrganizationQuery,
      success: Schema.Array(Update)
    }).annotateMerge(OpenApi.annotations({
      identifier: operationIds.updates,
      summary: "List published changelog entries, newest first",
      description: `Conditional: ETag, If-None-Match (304), Cache-Control max-age ${publicMaxAgeSeconds}. ${rateLimitOf("updates")}`
    }))
  )
  .prefix(widgetPrefix)
  .middleware(RequestErrors)
  .middleware(RateLimit)
  .annotateMerge(OpenApi.annotations({ title: "Widget", description: "Public widget API, scoped by organization" }))
{}

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
/** Compiles only while `RateLimits` has exactly one entry per widget endpoint (decision 0012, "Rate limits"). */
export const rateLimitsCoverTheWidget: Same<
  HttpApiEndpoint.Identifier<HttpApiGroup.Endpoints<typeof WidgetGroup>>,
  WidgetEndpoint
> = true

/**
 * `GET /health` when the database is unreachable: status 503 with an
 * `InternalServerError` body, since the API's error tags have none of their
 * own for it (docs/api.md: "Errors").
 */
const DatabaseUnavailable = InternalServerError.pipe(HttpApiSchema.status(503))

export class SystemGroup extends HttpApiGroup.make("system", { topLevel: true })
  .add(
    HttpApiEndpoint.get("health", "/health", {
      success: Health,
      error: DatabaseUnavailable
    }).annotateMerge(OpenApi.annotations({
      identifier: operationIds.health,
      summary: "Liveness and database reachability",
      description: "200 when the database answers, 503 otherwise. Does not depend on Redis."
    }))
  )
  .annotateMerge(OpenApi.annotations({ title: "System", description: "Operational endpoints" }))
{}

export class HearkenApi extends HttpApi.make("hearken")
  .add(WidgetGroup)
  .add(SystemGroup)
  .annotateMerge(OpenApi.annotations({
    transform: completeDocument,
    title: "Hearken widget API",
    version: "1.0.0",
    description: "Public HTTP API behind the embeddable feedback widget. No login; every widget route is scoped by " +
      "organizationId and rate-limited per client IP. This reference (GET /docs and GET /docs/openapi.json, with the " +
      `page's script /docs/scalar.js: one budget for the three) is too. ${rateLimitOf("docs")}`
  }))
{}
