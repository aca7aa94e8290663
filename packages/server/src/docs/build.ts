import { Effect } from "effect"
import { mkdirSync } from "node:fs"
import * as StaticAsset from "../edge/StaticAsset.js"
import { fingerprint, openApiJson, pageFile, renderPage, scalarBundle, scriptFile, staticDir } from "./page.js"

/**
 * `npm run build`'s last step: the reference page and Scalar's bundle, each
 * rendered and compressed once, into `dist/static/` (decision 0016), for the
 * server to read as bytes. Both carry the fingerprint of the document they
 * were built for; the page names the bundle by its own.
 */
const build = Effect.gen(function*() {
  const document = openApiJson()
  const bundle = Buffer.from(yield* scalarBundle, "utf8")
  const script = yield* StaticAsset.make(bundle, "text/javascript; charset=utf-8")
  const page = yield* StaticAsset.make(
    Buffer.from(renderPage(document, fingerprint(bundle.toString("utf8"))), "utf8"),
    "text/html; charset=utf-8"
  )
  mkdirSync(staticDir, { recursive: true })
  StaticAsset.write(script, `${staticDir}${scriptFile}`, fingerprint(document))
  StaticAsset.write(page, `${staticDir}${pageFile}`, fingerprint(document))
})

Effect.runPromise(build).catch((error: unknown) => {
  process.stderr.write(`hearken: cannot build the /docs page: ${String(error)}\n`)
  process.exit(1)
})
