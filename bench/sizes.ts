/**
 * Bundle sizes for browsers (issue 12): the thin typed client
 * (`@hearken/api/thin`, bundled alone by esbuild, minified, ESM) and the
 * whole widget (`packages/widget/dist/widget.js`, CSS included, as served).
 * gzip at level 9. `npm run bench` prints and records them; `node
 * bench/sizes.ts` prints them alone. Both need `npm run build` first.
 */
import { build } from "esbuild"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { gzipSync } from "node:zlib"

const root = join(import.meta.dirname, "..")

export interface BundleSize {
  readonly name: string
  readonly rawBytes: number
  readonly gzipBytes: number
  readonly budgetGzipBytes: number
  readonly met: boolean
}

const measure = (name: string, code: Uint8Array, budgetGzipBytes: number): BundleSize => {
  const gzipBytes = gzipSync(code, { level: 9 }).length
  return { name, rawBytes: code.length, gzipBytes, budgetGzipBytes, met: gzipBytes <= budgetGzipBytes }
}

const readWidget = () => {
  const file = join(root, "packages/widget/dist/widget.js")
  try {
    return readFileSync(file)
  } catch (error) {
    throw new Error(`${file} is missing: run npm run build first`, { cause: error })
  }
}

export const bundleSizes = async (): Promise<ReadonlyArray<BundleSize>> => {
  const thin = await build({
    entryPoints: [join(root, "packages/api/dist/thin.js")],
    bundle: true,
    minify: true,
    format: "esm",
    platform: "browser",
    legalComments: "none",
    write: false,
    logLevel: "silent"
  })
  return [
    measure("thin client (@hearken/api/thin)", thin.outputFiles[0]!.contents, 3 * 1024),
    measure("whole widget (widget.js, CSS included)", readWidget(), 20 * 1024)
  ]
}

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`

export const printBundleSizes = (sizes: ReadonlyArray<BundleSize>) => {
  console.log("\n| bundle | minified | gzip | budget (gzip) |")
  console.log("|---|---|---|---|")
  for (const s of sizes) {
    console.log(`| ${s.name} | ${kb(s.rawBytes)} | ${kb(s.gzipBytes)} (${s.gzipBytes} B) | ${kb(s.budgetGzipBytes)}: ${s.met ? "met" : "missed"} |`)
  }
  console.log("")
}

if (process.argv[1] === import.meta.filename) printBundleSizes(await bundleSizes())
