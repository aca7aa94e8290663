import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { fileURLToPath } from "node:url"
import * as StaticAsset from "../http/StaticAsset.js"

/** `packages/widget/dist`, built by `npm run build` (`packages/widget/build.mjs`). */
const widgetDist = fileURLToPath(new URL("../../../widget/dist/", import.meta.url))

/** Short: a new deploy reaches every embedding site within five minutes. */
const cacheControl = "public, max-age=300"

const read = (file: string) => StaticAsset.readOptional(`${widgetDist}${file}`)

const missing = HttpServerResponse.jsonUnsafe(
  { _tag: "NotFoundError", message: "the widget is not built (npm run build)" },
  { status: 404 }
)

/**
 * `GET /widget/widget.js`, the embeddable widget (one ES module), and `GET
 * /widget/`, a demo page that embeds it for `org_demo`. Both files are read
 * and compressed once, when the server starts (`http/StaticAsset.ts`); a
 * missing file answers a JSON 404.
 *
 * A page on any origin may load the module (`<script type="module">` fetches
 * it with CORS, so it carries `Access-Control-Allow-Origin: *`); the API calls
 * it then makes are what `DASHBOARD_ORIGIN`, `PUBLIC_URL` and `ROOT_DOMAIN`
 * allow or refuse. These routes are not part of the API, so the OpenAPI
 * document does not list them.
 */
const asset = (body: Uint8Array | undefined, contentType: string, headers: Record<string, string> = {}) =>
  body === undefined
    ? Effect.succeed(missing)
    : Effect.map(StaticAsset.make(body, contentType, { "cache-control": cacheControl, ...headers }), StaticAsset.respond)

export const layer = Layer.unwrap(Effect.gen(function*() {
  const [script, page] = yield* Effect.all([
    asset(read("widget.js"), "text/javascript; charset=utf-8", { "access-control-allow-origin": "*" }),
    asset(read("index.html"), "text/html; charset=utf-8")
  ])
  return Layer.mergeAll(
    HttpRouter.add("GET", "/widget/widget.js", script),
    // The router ignores a trailing slash: this is `/widget` too (the page links the script by absolute path).
    HttpRouter.add("GET", "/widget/", page)
  )
}))
