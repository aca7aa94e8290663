import { NotFoundError } from "@hearken/api/effect"
import { Effect, Layer } from "effect"
import { HttpRouter } from "effect/http"
import { HttpConfig } from "../config/http.js"
import * as ErrorBodies from "../edge/ErrorBodies.js"
import * as StaticAsset from "../edge/StaticAsset.js"
import { limited, RateLimitGate } from "../rate-limit/RateLimitGate.js"
import { fingerprint, openApiJson, pageFile, scriptFile, scriptPath, servedJson, staticDir } from "./page.js"

const notBuilt = ErrorBodies.respond(
  new NotFoundError({ message: "the /docs page is not built for this version of the API (npm run build)" })
)

/** The bundle's URL carries its fingerprint (`?v=`), so an answer stays good for as long as a cache keeps it. */
const immutable = { "cache-control": "public, max-age=31536000, immutable" }

/**
 * `GET /docs` (the reference page), `GET /docs/scalar.js` (Scalar's bundle)
 * and `GET /docs/openapi.json` (the document the page loads), as shared,
 * precompressed bytes (`edge/StaticAsset.ts`, decision 0016), behind the
 * `docs` rate limit, one budget per client IP for all three.
 *
 * The document is made at start-up (24 KB), with `servers` from
 * `PUBLIC_URL` (decision 0035). The page and the 3 MB bundle are made by
 * `npm run build` (`docs/build.ts`) and only read here: rendering them in the
 * server would keep some 35 MB of heap. Missing, or built from another
 * version of the document, they answer a JSON 404 naming the fix, as a
 * missing widget does. Needs `RateLimitGate` and `HttpConfig`.
 */
export const layer = Layer.unwrap(Effect.gen(function*() {
  const limitedDocs = limited(yield* RateLimitGate, "docs")
  const config = yield* HttpConfig
  const document = yield* StaticAsset.make(Buffer.from(servedJson(config.publicUrlGiven), "utf8"), "application/json")
  const builtFor = fingerprint(openApiJson())
  const page = StaticAsset.read(`${staticDir}${pageFile}`, builtFor, "text/html; charset=utf-8")
  const script = StaticAsset.read(`${staticDir}${scriptFile}`, builtFor, "text/javascript; charset=utf-8")
  if (page === undefined || script === undefined) {
    yield* Effect.logWarning("GET /docs answers 404: the page is not built for this version of the API (npm run build)")
  }
  const serve = (asset: StaticAsset.StaticAsset | undefined) =>
    limitedDocs(asset === undefined ? Effect.succeed(notBuilt) : StaticAsset.respond(asset))
  return Layer.mergeAll(
    HttpRouter.add("GET", "/docs", serve(page)),
    HttpRouter.add("GET", scriptPath, serve(script && { ...script, headers: { ...script.headers, ...immutable } })),
    HttpRouter.add("GET", "/docs/openapi.json", limitedDocs(StaticAsset.respond(document)))
  )
}))
