import { HearkenApi } from "@hearken/api/effect"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiScalar, OpenApi } from "effect/http-api"
import { createHash } from "node:crypto"
import { fileURLToPath } from "node:url"

/** The OpenAPI document, as `/docs/openapi.json` serves it and the page inlines it. */
export const openApiJson = (): string => JSON.stringify(OpenApi.fromApi(HearkenApi))

/** What a built page was made from: the document it inlines. */
export const fingerprint = (document: string) => createHash("sha256").update(document).digest("hex")

/** `packages/server/dist/static/`, written by `npm run build` (`docs/build.ts`). */
export const staticDir = fileURLToPath(new URL("../static/", import.meta.url))

/** The page's file in `staticDir`, beside its `.gz`, `.br` and `.sha256` (the fingerprint). */
export const pageFile = "docs.html"

/**
 * The Scalar reference page exactly as `HttpApiScalar.layer` renders it (its
 * 3 MB bundle inlined, so it works offline), asked of a router of its own.
 * Run by `npm run build`, never by the server: loading Scalar's bundle and
 * rendering the page grows a process's heap by some 35 MB for good.
 */
export const renderScalarPage = Effect.gen(function*() {
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
