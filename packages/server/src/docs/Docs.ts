import { HearkenApi } from "@hearken/api"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiScalar, OpenApi } from "effect/http-api"
import * as StaticAsset from "../http/StaticAsset.js"
import { limited, RateLimitGate } from "../rate-limit/http.js"

/**
 * The Scalar reference page exactly as `HttpApiScalar.layer` renders it (its
 * 3 MB bundle inlined, so it works offline), asked of a router of its own
 * once, at start-up: the page is then bytes, not a string per answer.
 */
const renderScalarPage = Effect.gen(function*() {
  const router = yield* HttpRouter.make
  yield* Layer.build(HttpApiScalar.layer(HearkenApi, {
    path: "/docs",
    // Scalar's default fonts come from its CDN; the page must work offline.
    scalar: { withDefaultFonts: false }
  }).pipe(Layer.provide(Layer.succeed(HttpRouter.HttpRouter, router))))
  const response = yield* router.asHttpEffect().pipe(
    Effect.provideService(HttpServerRequest.HttpServerRequest, HttpServerRequest.fromWeb(new Request("http://localhost/docs")))
  )
  return new Uint8Array(yield* Effect.promise(() => HttpServerResponse.toWeb(response).arrayBuffer()))
}).pipe(Effect.scoped)

/**
 * `GET /docs` (the reference UI) and `GET /docs/openapi.json` (the document it
 * inlines), each made once at start-up into shared, precompressed bytes
 * (`http/StaticAsset.ts`, decision 0016), behind the `docs` rate limit, one
 * budget per client IP for both. Needs `RateLimitGate`.
 */
export const layer = Layer.unwrap(Effect.gen(function*() {
  const limitedDocs = limited(yield* RateLimitGate, "docs")
  const [page, document] = yield* Effect.all([
    Effect.flatMap(renderScalarPage, (bytes) => StaticAsset.make(bytes, "text/html; charset=utf-8")),
    StaticAsset.make(Buffer.from(JSON.stringify(OpenApi.fromApi(HearkenApi)), "utf8"), "application/json")
  ], { concurrency: 2 })
  return Layer.mergeAll(
    HttpRouter.add("GET", "/docs", limitedDocs(StaticAsset.respond(page))),
    HttpRouter.add("GET", "/docs/openapi.json", limitedDocs(StaticAsset.respond(document)))
  )
}))
