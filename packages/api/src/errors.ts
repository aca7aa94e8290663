import { Schema } from "effect"

/** 400: a malformed body or query, or a feedback post aimed at a private board. */
export class DataValidationError extends Schema.TaggedError<DataValidationError>()(
  "DataValidationError",
  { message: Schema.optionalKey(Schema.String) },
  { httpApiStatus: 400 }
) {}

/** 401: the identity `token` of `POST /feedback` failed verification. */
export class UnauthorizedError extends Schema.TaggedError<UnauthorizedError>()(
  "UnauthorizedError",
  { message: Schema.optionalKey(Schema.String) },
  { httpApiStatus: 401 }
) {}

/** 404: no board matches `boardId` under `organizationId`, or no such route. */
export class NotFoundError extends Schema.TaggedError<NotFoundError>()(
  "NotFoundError",
  { message: Schema.optionalKey(Schema.String) },
  { httpApiStatus: 404 }
) {}

/** 429: the per-IP limit of the endpoint was exceeded. */
export class RateLimitExceededError extends Schema.TaggedError<RateLimitExceededError>()(
  "RateLimitExceededError",
  { message: Schema.optionalKey(Schema.String) },
  { httpApiStatus: 429 }
) {}

/** 500: a server-side failure. `message` is always present. */
export class InternalServerError extends Schema.TaggedError<InternalServerError>()(
  "InternalServerError",
  { message: Schema.String, detail: Schema.optionalKey(Schema.String) },
  { httpApiStatus: 500 }
) {}

/** 503: the rate limiter itself is unreachable; back off and retry. */
export class RateLimitUnavailableError extends Schema.TaggedError<RateLimitUnavailableError>()(
  "RateLimitUnavailableError",
  { message: Schema.optionalKey(Schema.String) },
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
