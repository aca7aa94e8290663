import { NotFoundError } from "@hearken/api"
import { Effect, Layer } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { readdirSync } from "node:fs"
import { fileURLToPath } from "node:url"
import * as ErrorBodies from "../http/ErrorBodies.js"
import * as StaticAsset from "../http/StaticAsset.js"

/** `packages/widget/dist`, built by `npm run build` (`packages/widget/build.mjs`). */
const widgetDist = fileURLToPath(new URL("../../../widget/dist/", import.meta.url))

/** Short: a new deploy reaches every embedding site within five minutes. */
const cacheControl = "public, max-age=300"

const read = (file: string) => StaticAsset.readOptional(`${widgetDist}${file}`)

const missing = ErrorBodies.respond(new NotFoundError({ message: "the widget is not built (npm run build)" }))

/**
 * `GET /widget/widget.js`, the embeddable widget (one ES module); `GET
 * /widget/locales/TAG.js` and `GET /widget/accent.js`, the modules it imports
 * when a visitor needs a language or the host gives an accent; and `GET
 * /widget/`, a demo page that embeds it for `org_demo`. The files are read
 * and compressed once, when the server starts (`http/StaticAsset.ts`); a
 * missing file answers a JSON 404.
 *
 * A page on any origin may load the modules (`<script type="module">` and
 * `import()` fetch them with CORS, so they carry `Access-Control-Allow-Origin:
 * *`); the API calls it then makes are what `DASHBOARD_ORIGIN`, `PUBLIC_URL` and `ROOT_DOMAIN`
 * allow or refuse. These routes are not part of the API, so the OpenAPI
 * document does not list them.
 */
const asset = (
  body: Uint8Array | undefined,
  contentType: string,
  headers: Record<string, string> = {}
): Effect.Effect<Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest>> =>
  body === undefined
    ? Effect.succeed(Effect.succeed(missing))
    : Effect.map(StaticAsset.make(body, contentType, { "cache-control": cacheControl, ...headers }), StaticAsset.respond)

/** The modules `build.mjs` made besides `widget.js`: `accent.js` and `locales/TAG.js`; none if the widget is not built. */
const siblingModules = (): ReadonlyArray<string> => {
  try {
    const locales = readdirSync(`${widgetDist}locales`).filter((file) => /^[\w-]+\.js$/.test(file))
    return ["accent.js", ...locales.map((file) => `locales/${file}`)]
  } catch {
    return []
  }
}

const javascript = "text/javascript; charset=utf-8"
/** Modules any page may import. */
const anyOrigin = { "access-control-allow-origin": "*" }

export const layer = Layer.unwrap(Effect.gen(function*() {
  const [script, page] = yield* Effect.all([
    asset(read("widget.js"), javascript, anyOrigin),
    asset(read("index.html"), "text/html; charset=utf-8")
  ])
  const siblings = yield* Effect.forEach(siblingModules(), (file) =>
    Effect.map(asset(read(file), javascript, anyOrigin), (answer) => HttpRouter.add("GET", `/widget/${file}`, answer)))
  return Layer.mergeAll(
    HttpRouter.add("GET", "/widget/widget.js", script),
    ...siblings,
    // The router ignores a trailing slash: this is `/widget` too (the page links the script by absolute path).
    HttpRouter.add("GET", "/widget/", page)
  )
}))
