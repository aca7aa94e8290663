import { Context, Effect } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import { HearkenApi } from "./Api.js"

/** The typed client derived from {@link HearkenApi}. */
export type HearkenClient = HttpApiClient.ForApi<typeof HearkenApi>

/**
 * The `Idempotency-Key` the requests of an effect carry, if any. The endpoint
 * does not declare the header (a declared one would make every call pass
 * `headers`), so the client adds it from here; see {@link withIdempotencyKey}.
 */
const RequestIdempotencyKey = Context.Reference<string | undefined>("hearken/RequestIdempotencyKey", {
  defaultValue: () => undefined
})

/**
 * Sends `key` as the `Idempotency-Key` of the requests `effect` makes: a
 * retry of `client.widget.feedback(…)` with the same key and body answers the
 * first post and creates nothing (docs/api.md: "Retries: Idempotency-Key").
 *
 *   client.widget.feedback({ payload }).pipe(withIdempotencyKey(crypto.randomUUID()), Effect.retry(…))
 *
 * The key is read when each request is sent, so every retry carries it.
 */
export const withIdempotencyKey = (key: string) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.provideService(effect, RequestIdempotencyKey, key)

const sendIdempotencyKey = HttpClient.mapRequestEffect((request: HttpClientRequest.HttpClientRequest) =>
  Effect.map(Effect.service(RequestIdempotencyKey), (key) =>
    key === undefined ? request : HttpClientRequest.setHeader(request, "idempotency-key", key)))

/**
 * Derives the typed client for a server at `baseUrl` (its origin, e.g.
 * `https://feedback.example.com`). Browser-safe: it uses `fetch` only.
 */
export const makeClient = (baseUrl: string | URL): Effect.Effect<HearkenClient> =>
  HttpApiClient.make(HearkenApi, { baseUrl, transformClient: sendIdempotencyKey }).pipe(Effect.provide(FetchHttpClient.layer))
