import {
  DataValidationError,
  InternalServerError,
  NotFoundError,
  RateLimitExceededError,
  RateLimitUnavailableError,
  UnauthorizedError
} from "@hearken/api"
import { Cause, Option, Schema } from "effect"
import { HttpServerError, HttpServerResponse } from "effect/http"

/**
 * The API's error bodies for answers made outside an endpoint: the router's
 * fallback and header checks (`Edge.ts`), Node's own refusals
 * (`NodeErrors.ts`), draining, rate-limited pages, static assets and the
 * metrics listener. Each body is its class's schema (`@hearken/api`
 * `errors.ts`) encoded, with the status the class declares, so these answers
 * cannot drift from what the endpoints send and the OpenAPI document lists.
 */
export type ApiError =
  | DataValidationError
  | InternalServerError
  | NotFoundError
  | RateLimitExceededError
  | RateLimitUnavailableError
  | UnauthorizedError

const classes = {
  DataValidationError,
  InternalServerError,
  NotFoundError,
  RateLimitExceededError,
  RateLimitUnavailableError,
  UnauthorizedError
} as const

type Tag = ApiError["_tag"]
/** A body as the schemas encode it. */
export type ErrorBody = { readonly [K in Tag]: typeof classes[K]["Encoded"] }[Tag]

const encoders: { readonly [K in Tag]: (error: Extract<ApiError, { readonly _tag: K }>) => ErrorBody } = {
  DataValidationError: Schema.encodeSync(DataValidationError),
  InternalServerError: Schema.encodeSync(InternalServerError),
  NotFoundError: Schema.encodeSync(NotFoundError),
  RateLimitExceededError: Schema.encodeSync(RateLimitExceededError),
  RateLimitUnavailableError: Schema.encodeSync(RateLimitUnavailableError),
  UnauthorizedError: Schema.encodeSync(UnauthorizedError)
}

/** The error's body, encoded by its class's schema. */
export const bodyOf = (error: ApiError): ErrorBody => (encoders[error._tag] as (error: ApiError) => ErrorBody)(error)

/** The status `errors.ts` gives the error's class (`httpApiStatus`). */
export const statusOf = (error: ApiError): number => classes[error._tag].ast.annotations?.["httpApiStatus"] as number

/**
 * An unknown route: the bare `{"_tag":"NotFoundError"}`, no message. Written
 * as the schema's encoded type (an instance would encode `message: ""`).
 */
export const routeNotFound: ErrorBody = { _tag: "NotFoundError" }

/** The body as JSON text, for answers written by hand to a Node response or socket. */
export const json = (body: ErrorBody): string => JSON.stringify(body)

/**
 * The answer: the encoded body, with its class's status unless `status` says
 * otherwise (Node's own statuses: 405, 408, 413, 417, 431; 503 while starting
 * or draining).
 */
export const respond = (
  error: ApiError,
  options: { readonly status?: number; readonly headers?: Record<string, string> } = {}
): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.jsonUnsafe(bodyOf(error), { status: options.status ?? statusOf(error), headers: options.headers ?? {} })

/** The router found no route for the request. */
export const isRouteNotFound = (cause: Cause.Cause<unknown>): boolean =>
  Option.exists(Cause.findErrorOption(cause), (e) => HttpServerError.isHttpServerError(e) && e.reason._tag === "RouteNotFound")
