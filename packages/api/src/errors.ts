import { Schema } from "effect"

/**
 * An error body: `_tag` and `fields`, as a struct named like the error, so
 * that its OpenAPI component is `NotFoundError`, not `NotFoundErrorEncoded`
 * (see `named` in `schemas.ts`). Each class below is what
 * `Schema.TaggedError(tag, fields)` makes, `Schema.Error` over an unnamed
 * tagged struct, with the struct named.
 */
const body = <const Tag extends string, const Fields extends Schema.Struct.Fields>(tag: Tag, fields: Fields) =>
  Schema.TaggedStruct(tag, fields).annotate({ identifier: tag })

/** 400: a malformed body or query, or a feedback post aimed at a private board. */
export class DataValidationError extends Schema.Error<DataValidationError>("DataValidationError")(
  body("DataValidationError", { message: Schema.optionalKey(Schema.String) }),
  { httpApiStatus: 400 }
) {}

/** 401: the identity `token` of `POST /feedback` failed verification. */
export class UnauthorizedError extends Schema.Error<UnauthorizedError>("UnauthorizedError")(
  body("UnauthorizedError", { message: Schema.optionalKey(Schema.String) }),
  { httpApiStatus: 401 }
) {}

/** 404: no board matches `boardId` under `organizationId`, or no such route. */
export class NotFoundError extends Schema.Error<NotFoundError>("NotFoundError")(
  body("NotFoundError", { message: Schema.optionalKey(Schema.String) }),
  { httpApiStatus: 404 }
) {}

/** 429: the per-IP limit of the endpoint was exceeded. */
export class RateLimitExceededError extends Schema.Error<RateLimitExceededError>("RateLimitExceededError")(
  body("RateLimitExceededError", { message: Schema.optionalKey(Schema.String) }),
  { httpApiStatus: 429 }
) {}

/** 500: a server-side failure. `message` is always present. */
export class InternalServerError extends Schema.Error<InternalServerError>("InternalServerError")(
  body("InternalServerError", { message: Schema.String, detail: Schema.optionalKey(Schema.String) }),
  { httpApiStatus: 500 }
) {}

/** 503: the rate limiter itself is unreachable; back off and retry. */
export class RateLimitUnavailableError extends Schema.Error<RateLimitUnavailableError>("RateLimitUnavailableError")(
  body("RateLimitUnavailableError", { message: Schema.optionalKey(Schema.String) }),
  { httpApiStatus: 503 }
) {}

/** Every error the API answers with, by `_tag`: what a body's `_tag` may be. */
export const ApiErrors = {
  DataValidationError,
  UnauthorizedError,
  NotFoundError,
  RateLimitExceededError,
  InternalServerError,
  RateLimitUnavailableError
} as const
export type ApiError = InstanceType<typeof ApiErrors[keyof typeof ApiErrors]>
