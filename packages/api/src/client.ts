import { Effect } from "effect"
import { FetchHttpClient } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import { HearkenApi } from "./Api.js"

/** The typed client derived from {@link HearkenApi}. */
export type HearkenClient = HttpApiClient.ForApi<typeof HearkenApi>

/**
 * Derives the typed client for a server at `baseUrl` (its origin, e.g.
 * `https://feedback.example.com`). Browser-safe: it uses `fetch` only.
 */
export const makeClient = (baseUrl: string | URL): Effect.Effect<HearkenClient> =>
  HttpApiClient.make(HearkenApi, { baseUrl }).pipe(Effect.provide(FetchHttpClient.layer))
