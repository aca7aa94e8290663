import { RateLimit, type WidgetEndpoint } from "@hearken/api/effect"
import { Effect, Layer } from "effect"
import { RateLimitGate } from "./RateLimitGate.js"

/** The API's `RateLimit` middleware: the gate, before anything else on a widget route. */
export const layer = Layer.effect(
  RateLimit,
  Effect.gen(function*() {
    const gate = yield* RateLimitGate
    return (httpEffect, { endpoint }) =>
      // `rateLimitsCoverTheWidget` (Api.ts) makes every widget identifier a key of the table.
      Effect.andThen(gate.admit(endpoint.identifier as WidgetEndpoint), httpEffect)
  })
)
