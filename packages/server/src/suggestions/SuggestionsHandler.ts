import type { SuggestionsRequest } from "@hearken/api/effect"
import { Effect } from "effect"
import { organization } from "../observability/Tracing.js"
import { Suggestions } from "./Suggestions.js"

/** `POST /suggestions`. Each request's HTTP span names its organization (when spans are exported). */
export const handler = Effect.gen(function*() {
  const suggestions = yield* Suggestions
  return ({ payload }: { readonly payload: SuggestionsRequest }) =>
    organization(payload.organizationId).pipe(Effect.andThen(suggestions.suggest(payload)))
})
