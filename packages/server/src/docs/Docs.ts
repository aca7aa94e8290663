import { NotFoundError } from "@hearken/api/effect"
import { Effect, Layer } from "effect"
import { HttpRouter } from "effect/http"
import * as ErrorBodies from "../http/ErrorBodies.js"
import * as StaticAsset from "../http/StaticAsset.js"
import { limited, RateLimitGate } from "../rate-limit/http.js"
import { fingerprint, openApiJson, pageFile, staticDir } from "./page.js"

const notBuilt = ErrorBodies.respond(
  new NotFoundError({ message: "the /docs page is not built for this version of the API (npm run build)" })
)

/**
 * `GET /docs` (the reference UI) and `GET /docs/openapi.json` (the document it
 * inlines), as shared, precompressed bytes (`http/StaticAsset.ts`, decision
 * 0016), behind the `docs` rate limit, one budget per client IP for both.
 *
 * The document is made at start-up (24 KB). The page, Scalar's 3 MB bundle
 * with the document inlined, is made by `npm run build` (`docs/build.ts`) and
 * only read here: rendering it in the server would keep some 35 MB of heap.
 * A page missing, or built from another version of the document, answers a
 * JSON 404 naming the fix, as a missing widget does. Needs `RateLimitGate`.
 */
export const layer = Layer.unwrap(Effect.gen(function*() {
  const limitedDocs = limited(yield* RateLimitGate, "docs")
  const json = openApiJson()
  const document = yield* StaticAsset.make(Buffer.from(json, "utf8"), "application/json")
  const page = StaticAsset.read(`${staticDir}${pageFile}`, fingerprint(json), "text/html; charset=utf-8")
  if (page === undefined) yield* Effect.logWarning("GET /docs answers 404: the page is not built for this version of the API (npm run build)")
  return Layer.mergeAll(
    HttpRouter.add("GET", "/docs", limitedDocs(page === undefined ? Effect.succeed(notBuilt) : StaticAsset.respond(page))),
    HttpRouter.add("GET", "/docs/openapi.json", limitedDocs(StaticAsset.respond(document)))
  )
}))
