/**
 * Bundle sizes for browsers: the thin typed client (`@hearken/api/thin`,
 * bundled alone by esbuild, minified, ESM), the widget's first download
 * (`packages/widget/dist/widget.js`, CSS and English included, as served),
 * and the modules it imports only when used: the accent's contrast code
 * (`dist/accent.js`) and each translation (`dist/locales/TAG.js`). gzip at
 * level 9. `npm run bench` prints and records them; `node
 * bench/sizes.ts` prints them alone. Both need `npm run build` first.
 */
import { build } from "esbuild"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { gzipSync } from "node:zlib"

const root = join(import.meta.dirname, "..", "..")

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

const widgetDist = join(root, "packages/widget/dist")

/**
 * Budgets, gzip: the thin client; the widget in the page as a page first
 * downloads it; the embed script; the frame page with its script and its
 * language (the largest), as the frame first loads it; the accent's code, one
 * language; and each part fetched only when used (the launcher in the page,
 * suggestions once the visitor types, the changelog tab).
 */
export const budgets = { thin: 3 * 1024, widget: 8 * 1024, embed: 2 * 1024, frame: 10 * 1024, accent: 1024, locale: 1.5 * 1024, part: 1.5 * 1024 }

const readWidget = (path: string) => {
  const file = join(widgetDist, path)
  try {
    return readFileSync(file)
  } catch (error) {
    throw new Error(`${file} is missing: run npm run build first`, { cause: error })
  }
}

/**
 * The frame's first load in its heaviest language: the page, `frame.js` and
 * the largest language file, each gzipped as served (three responses).
 */
const frameFirstLoad = (): BundleSize => {
  const parts = ["frame.html", "frame.js"].map(readWidget)
  const largest = readdirSync(join(widgetDist, "locales")).map((file) => readWidget(`locales/${file}`))
    .sort((a, b) => gzipSync(b, { level: 9 }).length - gzipSync(a, { level: 9 }).length)[0]!
  const sizes = [...parts, largest].map((code) => measure("", code, 0))
  const gzipBytes = sizes.reduce((sum, size) => sum + size.gzipBytes, 0)
  return {
    name: "frame, first load (frame page, frame.js, its largest language)",
    rawBytes: sizes.reduce((sum, size) => sum + size.rawBytes, 0),
    gzipBytes,
    budgetGzipBytes: budgets.frame,
    met: gzipBytes <= budgets.frame
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
    measure("thin client (@hearken/api/thin)", thin.outputFiles[0]!.contents, budgets.thin),
    measure("widget, first download (widget.js: CSS, English)", readWidget("widget.js"), budgets.widget),
    measure("embed script (embed.js)", readWidget("embed.js"), budgets.embed),
    frameFirstLoad(),
    measure("widget accent, when given (accent.js)", readWidget("accent.js"), budgets.accent),
    ...["launcher", "suggestions", "updates"].map((part) =>
      measure(`widget part, when used (${part}.js)`, readWidget(`${part}.js`), budgets.part)),
    ...readdirSync(join(widgetDist, "locales")).sort().map((file) =>
      measure(`widget language, when used (locales/${file})`, readWidget(`locales/${file}`), budgets.locale))
  ]
}
