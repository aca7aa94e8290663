import { HearkenApi } from "@hearken/api/effect"
import { Effect, Layer, Option } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiScalar, OpenApi } from "effect/http-api"
import { createHash } from "node:crypto"
import { fileURLToPath } from "node:url"

/** The OpenAPI document as the API defines it, without `servers`: what the built page is made from. */
export const openApiJson = (): string => JSON.stringify(OpenApi.fromApi(HearkenApi))

/**
 * `servers` from `PUBLIC_URL`, known only at run time (decision 0035). Set:
 * that URL, without a trailing slash, so that a path appends to it. Unset: `/`,
 * the server the document was fetched from, which the default
 * (`http://localhost:$PORT`) is only on the operator's own machine.
 */
export const serversFor = (publicUrl: Option.Option<URL>) =>
  Option.match(publicUrl, {
    onNone: () => [{ url: "/", description: "This server: where this document was fetched from (PUBLIC_URL is not set)" }],
    onSome: (url) => [{ url: url.href.replace(/\/+$/, ""), description: "PUBLIC_URL" }]
  })

/** The document `GET /docs/openapi.json` serves: the API's, with `servers` right after `info`. */
export const servedJson = (publicUrl: Option.Option<URL>): string => {
  const { info, openapi, ...rest } = OpenApi.fromApi(HearkenApi)
  return JSON.stringify({ openapi, info, servers: serversFor(publicUrl), ...rest })
}

/** What a built page was made from: the document it describes. */
export const fingerprint = (document: string) => createHash("sha256").update(document).digest("hex")

/**
 * `packages/server/dist/static/`, written by `npm run build` (`docs/build.ts`);
 * named from the package, so that the source (as the tests load it) finds it too.
 */
export const staticDir = fileURLToPath(new URL("../../dist/static/", import.meta.url))

/** The page's file in `staticDir`, beside its `.gz`, `.br` and `.sha256` (the fingerprint). */
export const pageFile = "docs.html"

/** Scalar's bundle in `staticDir`, served as `GET /docs/scalar.js`. */
export const scriptFile = "scalar.js"
export const scriptPath = "/docs/scalar.js"

/**
 * Scalar's standalone bundle (3 MB), exactly the one `HttpApiScalar.layer`
 * inlines, taken from the page it renders, asked once on a router of its own.
 * Run by `npm run build`, never by the server: loading it grows a process's
 * heap by some 35 MB for good (decision 0016).
 */
export const scalarBundle = Effect.gen(function*() {
  const router = yield* HttpRouter.make
  yield* Layer.build(HttpApiScalar.layer(HearkenApi, { path: "/docs" }).pipe(
    Layer.provide(Layer.succeed(HttpRouter.HttpRouter, router))
  ))
  const response = yield* router.asHttpEffect().pipe(
    Effect.provideService(HttpServerRequest.HttpServerRequest, HttpServerRequest.fromWeb(new Request("http://localhost/docs")))
  )
  const html = yield* Effect.promise(() => HttpServerResponse.toWeb(response).text())
  // The bundle is the page's first script, inlined as it is (it cannot hold `</script>`, or the page would break).
  const start = html.indexOf("<script>")
  const end = html.indexOf("</script>", start)
  const bundle = start < 0 || end < 0 ? "" : html.slice(start + "<script>".length, end)
  if (!bundle.includes("createApiReference")) return yield* Effect.die(new Error("Scalar's bundle was not found in HttpApiScalar's page"))
  return bundle
}).pipe(Effect.scoped)

const escapeHtml = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;")

/** JSON inside `<script>`: nothing in it can close the element or open a comment. */
const scriptJson = (value: unknown) =>
  JSON.stringify(value).replace(/</g, "\\u003c").replace(/>/g, "\\u003e").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029")

/**
 * Scalar's options (the bundled 1.43.5's names, read from its configuration
 * schema): nothing that points at a hosted service. `showDeveloperTools`
 * (default "localhost") is the "Developer Tools / Share / Generate SDKs /
 * Configure" bar; `hideClientButton` the "Open API Client" link to
 * client.scalar.com; `customCss` hides the "Powered by Scalar" link, which no
 * option removes. Fonts stay local (`withDefaultFonts: false`).
 */
export const scalarOptions = {
  withDefaultFonts: false,
  hideClientButton: true,
  showDeveloperTools: "never",
  telemetry: false,
  customCss: `a[href^="https://www.scalar.com"], a[href^="https://scalar.com"] { display: none !important; }`
} as const

type Operation = { summary?: string; description?: string; operationId?: string; tags?: Array<string> }

/**
 * The reference as plain HTML, shown from the first paint and without
 * JavaScript: every operation with its method, path, summary and description.
 * Scalar replaces it once its bundle has run.
 */
const staticReference = (doc: Record<string, any>) => {
  const operations: Array<string> = []
  for (const [path, item] of Object.entries<Record<string, Operation>>(doc["paths"] ?? {})) {
    for (const [method, operation] of Object.entries(item)) {
      operations.push(`<section>
<h2><span class="method">${escapeHtml(method.toUpperCase())}</span> <code>${escapeHtml(path)}</code></h2>
<p><strong>${escapeHtml(operation.summary ?? "")}</strong>${operation.operationId ? ` <small>(${escapeHtml(operation.operationId)})</small>` : ""}</p>
${operation.description ? `<p>${escapeHtml(operation.description)}</p>` : ""}
</section>`)
    }
  }
  return `<main id="hearken-static-reference">
<h1>${escapeHtml(doc["info"]?.["title"] ?? "API reference")}</h1>
<p>${escapeHtml(doc["info"]?.["description"] ?? "")}</p>
<p>The machine-readable document: <a href="/docs/openapi.json">/docs/openapi.json</a> (OpenAPI ${escapeHtml(doc["openapi"] ?? "")}).</p>
${operations.join("\n")}
</main>`
}

/**
 * The `/docs` page (issue 29): small, so that it paints at once. The reference
 * is in it as HTML; Scalar's bundle (`/docs/scalar.js`) and the document
 * (`/docs/openapi.json`, with the `servers` of this run) are preloaded from
 * the head, and a module script runs the bundle after the first paint and
 * mounts Scalar over the HTML (in a hidden tab, once it is shown: no frame is
 * drawn before). Nothing comes from another host. `version` (the bundle's fingerprint) makes the
 * script's URL change with its bytes, so that it may be cached for good.
 */
export const renderPage = (document: string, version: string) => {
  const doc = JSON.parse(document) as Record<string, any>
  const title = `${doc["info"]?.["title"] ?? "API"} reference`
  const script = `${scriptPath}?v=${version.slice(0, 16)}`
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<meta name="description" content="${escapeHtml(doc["info"]?.["description"] ?? "")}">
<link rel="icon" href="data:,">
<link rel="preload" href="/docs/openapi.json" as="fetch" crossorigin="anonymous">
<link rel="preload" href="${escapeHtml(script)}" as="script">
<style>
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1b1b1b; background: #fff; }
#hearken-static-reference { max-width: 52rem; margin: 0 auto; padding: 3rem 1.5rem; }
#hearken-static-reference h1 { font-size: 1.8rem; margin: 0 0 1rem; }
#hearken-static-reference h2 { font-size: 1.05rem; margin: 2rem 0 0.25rem; font-weight: 600; }
#hearken-static-reference .method { font: 600 0.8rem ui-monospace, monospace; color: #0b7a3e; }
#hearken-static-reference code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
#hearken-static-reference p { margin: 0.25rem 0; }
@media (prefers-color-scheme: dark) { body { color: #e6e6e6; background: #0f0f0f; } #hearken-static-reference a { color: #8ab4f8; } }
</style>
</head>
<body>
<div id="api-reference-container">
${staticReference(doc)}
</div>
<script type="module">
const content = fetch("/docs/openapi.json").then((response) => response.ok ? response.json() : undefined)
// After the first paint (a frame, then a task): the reference above is on screen before 3 MB of script run.
await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve)))
await new Promise((resolve, reject) => {
  const script = Object.assign(document.createElement("script"), { src: ${scriptJson(script)}, onload: resolve, onerror: reject })
  document.body.append(script)
})
const spec = await content
if (spec !== undefined) {
  performance.mark("hearken:scalar")
  window.Scalar.createApiReference(document.getElementById("api-reference-container"), {
    ...${scriptJson(scalarOptions)},
    content: spec
  })
}
</script>
</body>
</html>
`
}
