import { Effect } from "effect"
import { ifNoneMatch } from "../caching/ConditionalAnswers.js"
import { organization } from "../observability/Tracing.js"
import { PublicBoards } from "./PublicBoards.js"

/** `GET /boards`. Each request's HTTP span names its organization (when spans are exported). */
export const handler = Effect.gen(function*() {
  const boards = yield* PublicBoards
  return ({ query }: { readonly query: { readonly organizationId: string } }) =>
    organization(query.organizationId).pipe(Effect.andThen(ifNoneMatch), Effect.flatMap((tag) => boards.answer(query.organizationId, tag)))
})
