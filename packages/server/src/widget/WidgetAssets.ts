import { NotFoundError } from "@hearken/api/effect"
import { Effect, Layer } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { createHash } from "node:crypto"
import { readdirSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { HttpConfig } from "../config/http.js"
import * as ErrorBodies from "../edge/ErrorBodies.js"
import * as StaticAsset from "../edge/StaticAsset.js"

/** `packages/widget/dist`, built by `npm run build` (`packages/widget/build.mjs`). */
const widgetDist = fileURLToPath(new URL("../../../widget/dist/", import.meta.url))

/** Short: a new deploy reaches every embedding site within five minutes. */
const cacheControl = "public, max-age=300"

const read = (file: string) => StaticAsset.readOptional(`${widgetDist}${file}`)

const missing = ErrorBodies.respond(new NotFoundError({ message: "the widget is not built (npm run build)" }))

/**
 * The widget's files, read and compressed once when the server starts
 * (`edge/StaticAsset.ts`); a missing file answers a JSON 404.
 *
 * - `GET /widget/embed.js`: the embed script, a classic script any page may
 *   load. It frames `GET /widget/frame`, the widget's page on this origin,
 *   whose API calls are same-origin: it works on any site, with no CORS
 *   setting. The page carries its own Content-Security-Policy (below).
 * - `GET /widget/widget.js`: the widget in the host page, for the origins the
 *   API allows (`DASHBOARD_ORIGIN`, `PUBLIC_URL`, `ROOT_DOMAIN`).
 * - `GET /widget/frame.js`, `/widget/locales/TAG.js`, `/widget/accent.js`,
 *   `/widget/launcher.js`, `/widget/suggestions.js`, `/widget/updates.js`:
 *   the modules those import, each when first needed.
 * - `GET /widget/`: a demo page for `org_demo`.
 *
 * A page on any origin may load the scripts (`<script type="module">` and
 * `import()` fetch them with CORS, so they carry `Access-Control-Allow-Origin:
 * *`). These routes are not part of the API: the OpenAPI document does not
 * list them.
 */
const asset = (
  body: Uint8Array | undefined,
  contentType: string,
  headers: Record<string, string> = {}
): Effect.Effect<Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest>> =>
  body === undefined
    ? Effect.succeed(Effect.succeed(missing))
    : Effect.map(StaticAsset.make(body, contentType, { "cache-control": cacheControl, ...headers }), StaticAsset.respond)

/** The modules `build.mjs` made that a page may import: all but the frame page's; none if the widget is not built. */
const modules = (): ReadonlyArray<string> => {
  try {
    const top = readdirSync(widgetDist).filter((file) => /^[\w-]+\.js$/.test(file))
    const locales = readdirSync(`${widgetDist}locales`).filter((file) => /^[\w-]+\.js$/.test(file))
    return [...top, ...locales.map((file) => `locales/${file}`)]
  } catch {
    return []
  }
}

/** The hash of each stylesheet the widget inlines (`dist/styles/`), for the frame's `style-src`. */
const styleHashes = (): ReadonlyArray<string> => {
  try {
    return readdirSync(`${widgetDist}styles`).filter((file) => file.endsWith(".css")).map((file) =>
      `'sha256-${createHash("sha256").update(read(`styles/${file}`)!).digest("base64")}'`)
  } catch {
    return []
  }
}

/**
 * The frame page's policy: its own scripts and the API on its origin only,
 * exactly the widget's stylesheets, images from anywhere (changelog covers
 * and the images in its entries), no plugins, no forms posted elsewhere, and
 * framed by `WIDGET_FRAME_ANCESTORS` (default: any site).
 */
export const frameContentSecurityPolicy = (frameAncestors: string, styles: ReadonlyArray<string>) =>
  [
    "default-src 'none'",
    "script-src 'self'",
    `style-src ${styles.length === 0 ? "'none'" : styles.join(" ")}`,
    "img-src * data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    `frame-ancestors ${frameAncestors}`
  ].join("; ")

const javascript = "text/javascript; charset=utf-8"
/** Modules any page may import. */
const anyOrigin = { "access-control-allow-origin": "*" }

export const layer = Layer.unwrap(Effect.gen(function*() {
  const config = yield* HttpConfig
  const html = "text/html; charset=utf-8"
  const [page, frame] = yield* Effect.all([
    asset(read("index.html"), html),
    asset(read("frame.html"), html, {
      "content-security-policy": frameContentSecurityPolicy(config.widgetFrameAncestors, styleHashes()),
      "x-content-type-options": "nosniff"
    })
  ])
  const scripts = yield* Effect.forEach(modules(), (file) =>
    Effect.map(asset(read(file), javascript, { ...anyOrigin, "x-content-type-options": "nosniff" }), (answer) =>
      HttpRouter.add("GET", `/widget/${file}`, answer)))
  return Layer.mergeAll(
    HttpRouter.add("GET", "/widget/frame", frame),
    // The router ignores a trailing slash: this is `/widget` too (the page links the script by absolute path).
    HttpRouter.add("GET", "/widget/", page),
    ...scripts
  )
}))
