/**
 * Bundles the widget into one minified ES module, `dist/widget.js`, with its
 * CSS inlined as a string, and copies the demo page to `dist/index.html`.
 * `npm run build` runs it after `tsc -b` (which builds `@hearken/api/thin`,
 * the one dependency). `node packages/widget/build.mjs` or `build()`.
 */
import { build as esbuild, transform } from "esbuild"
import { copyFile, mkdir, readFile } from "node:fs/promises"
import { fileURLToPath } from "node:url"

const here = (path) => fileURLToPath(new URL(path, import.meta.url))

/** `import css from "./x.css"`: the file, minified, as a string. */
const minifiedCss = {
  name: "minified-css",
  setup(build) {
    build.onLoad({ filter: /\.css$/ }, async ({ path }) => {
      const { code } = await transform(await readFile(path, "utf8"), { loader: "css", minify: true })
      return { contents: `export default ${JSON.stringify(code.trim())}`, loader: "js" }
    })
  }
}

export const build = async () => {
  await mkdir(here("./dist"), { recursive: true })
  const result = await esbuild({
    entryPoints: [here("./src/index.ts")],
    outfile: here("./dist/widget.js"),
    bundle: true,
    format: "esm",
    platform: "browser",
    target: ["es2022", "chrome111", "firefox113", "safari16.4"],
    minify: true,
    legalComments: "none",
    plugins: [minifiedCss],
    metafile: true,
    logLevel: "warning"
  })
  await copyFile(here("./demo.html"), here("./dist/index.html"))
  return result
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await build()
