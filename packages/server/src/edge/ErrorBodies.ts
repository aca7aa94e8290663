import { type ApiError, ApiErrors } from "@hearken/api/effect"
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
export type { ApiError }

type Tag = ApiError["_tag"]
/** A body as the schemas encode it. */
export type ErrorBody = { readonly [K in Tag]: typeof ApiErrors[K]["Encoded"] }[Tag]

const encoders = Object.fromEntries(
  Object.entries(ApiErrors).map(([tag, schema]) => [tag, Schema.encodeSync(schema as Schema.Codec<ApiError, ErrorBody>)])
) as { readonly [K in Tag]: (error: ApiError) => ErrorBody }

/** The error's body, encoded by its class's schema. */
export const bodyOf = (error: ApiError): ErrorBody => encoders[error._tag](error)

/** The status `errors.ts` gives the error's class (`httpApiStatus`). */
export const statusOf = (error: ApiError): number => ApiErrors[error._tag].ast.annotations?.["httpApiStatus"] as number

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
