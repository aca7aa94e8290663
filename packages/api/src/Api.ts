import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, OpenApi } from "effect/http-api"
import {
  DataValidationError,
  InternalServerError,
  NotFoundError,
  RateLimitExceededError,
  RateLimitUnavailableError,
  ServiceUnavailableError,
  UnauthorizedError
} from "./errors.js"
import {
  Board,
  CreatedPost,
  FeedbackRequest,
  Health,
  OrganizationQuery,
  SuggestionMatch,
  SuggestionsRequest,
  Update
} from "./schemas.js"

/** The prefix every widget route lives under (spec §9). */
export const widgetPrefix = "/api/widget/v1"

/**
 * Turns request decoding failures into `DataValidationError` and unexpected
 * failures into `InternalServerError`, so every endpoint declares both.
 * Clients need no implementation of it.
 */
export class RequestErrors extends HttpApiMiddleware.Service<RequestErrors>()("hearken/RequestErrors", {
  error: [DataValidationError, InternalServerError]
}) {}

const rateLimited = [RateLimitExceededError, RateLimitUnavailableError] as const

export class WidgetGroup extends HttpApiGroup.make("widget")
  .add(
    HttpApiEndpoint.post("suggestions", "/suggestions", {
      payload: SuggestionsRequest,
      success: Schema.Array(SuggestionMatch).check(Schema.isMaxLength(5)),
      error: rateLimited
    }).annotateMerge(OpenApi.annotations({
      summary: "Suggest similar public posts for a draft",
      description: "Up to five public posts of the board similar to the draft. Rate limit: 5 per minute per IP."
    })),
    HttpApiEndpoint.post("feedback", "/feedback", {
      payload: FeedbackRequest,
      success: CreatedPost,
      error: [NotFoundError, UnauthorizedError, ...rateLimited]
    }).annotateMerge(OpenApi.annotations({
      summary: "Create a feedback post on a public board",
      description: "Rate limit: 20 per minute per IP."
    })),
    HttpApiEndpoint.get("boards", "/boards", {
      query: OrganizationQuery,
      success: Schema.Array(Board),
      error: rateLimited
    }).annotateMerge(OpenApi.annotations({
      summary: "List the organization's public boards",
      description: "Ordered by createdAt, then id. Rate limit: 120 per minute per IP."
    })),
    HttpApiEndpoint.get("updates", "/updates", {
      query: OrganizationQuery,
      success: Schema.Array(Update),
      error: rateLimited
    }).annotateMerge(OpenApi.annotations({
      summary: "List published changelog entries, newest first",
      description: "Rate limit: 120 per minute per IP."
    }))
  )
  .prefix(widgetPrefix)
  .annotateMerge(OpenApi.annotations({ title: "Widget", description: "Public widget API, scoped by organization" }))
{}

export class SystemGroup extends HttpApiGroup.make("system", { topLevel: true })
  .add(
    HttpApiEndpoint.get("health", "/health", {
      success: Health,
      error: ServiceUnavailableError
    }).annotateMerge(OpenApi.annotations({
      summary: "Liveness and database reachability",
      description: "200 when the database answers, 503 otherwise. Does not depend on Redis."
    }))
  )
  .annotateMerge(OpenApi.annotations({ title: "System", description: "Operational endpoints" }))
{}

export class HearkenApi extends HttpApi.make("hearken")
  .add(WidgetGroup)
  .add(SystemGroup)
  .middleware(RequestErrors)
  .annotateMerge(OpenApi.annotations({
    title: "Hearken widget API",
    version: "1.0.0",
    description: "Public HTTP API behind the embeddable feedback widget. No login; every route is scoped by organizationId and rate-limited per client IP."
  }))
{}
