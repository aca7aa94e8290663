import { Effect } from "effect"
import { ifNoneMatch } from "../caching/ConditionalAnswers.js"
import { organization } from "../observability/Tracing.js"
import { PublicUpdates } from "./PublicUpdates.js"

/** `GET /updates`. Each request's HTTP span names its organization (when spans are exported). */
export const handler = Effect.gen(function*() {
  const updates = yield* PublicUpdates
  return ({ query }: { readonly query: { readonly organizationId: string } }) =>
    organization(query.organizationId).pipe(Effect.andThen(ifNoneMatch), Effect.flatMap((tag) => updates.answer(query.organizationId, tag)))
})
