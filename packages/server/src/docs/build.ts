import { Effect } from "effect"
import { mkdirSync } from "node:fs"
import * as StaticAsset from "../http/StaticAsset.js"
import { fingerprint, openApiJson, pageFile, renderScalarPage, staticDir } from "./page.js"

/**
 * `npm run build`'s last step: the reference page rendered and compressed
 * once, into `dist/static/` (decision 0016), for the server to read as bytes.
 */
const build = Effect.gen(function*() {
  const page = yield* Effect.flatMap(renderScalarPage, (bytes) => StaticAsset.make(bytes, "text/html; charset=utf-8"))
  mkdirSync(staticDir, { recursive: true })
  StaticAsset.write(page, `${staticDir}${pageFile}`, fingerprint(openApiJson()))
})

Effect.runPromise(build).catch((error: unknown) => {
  process.stderr.write(`hearken: cannot build the /docs page: ${String(error)}\n`)
  process.exit(1)
})
