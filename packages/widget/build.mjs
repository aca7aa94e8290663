/**
 * Bundles the widget into minified ES modules with its CSS and its English
 * messages inlined: `dist/widget.js`, the widget in the host page, and
 * `dist/frame.js`, the same widget in the frame page (`dist/frame.html`,
 * served as `/widget/frame`); each other language into its own module,
 * `dist/locales/TAG.js`, and the accent's contrast code into
 * `dist/accent.js`, which either imports only when they are used. The embed
 * script, `dist/embed.js`, is a classic script (IIFE) that any page can
 * load. Writes each stylesheet alone to `dist/styles/` (the server puts
 * their hashes in the frame's Content-Security-Policy), and copies the demo page to
 * `dist/index.html`.
 * `npm run build` runs it after `tsc -b` (which builds `@hearken/api/thin`,
 * the one dependency). `node packages/widget/build.mjs` or `build()`.
 */
import { build as esbuild, transform } from "esbuild"
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises"
import { dirname, join } from "node:path"
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

/**
 * Writes `bytes` to `path` only if the file holds something else, through a
 * temporary file and a rename: a build that changes nothing touches nothing,
 * and a server (or a test) reading `dist/` meanwhile never finds a file
 * missing or half written. Tests run this script while other tests serve
 * `dist/`.
 */
const put = async (path, bytes) => {
  const previous = await readFile(path).catch(() => undefined)
  if (previous !== undefined && Buffer.compare(previous, Buffer.from(bytes)) === 0) return
  await mkdir(dirname(path), { recursive: true })
  const temporary = `${path}.${process.pid}.tmp`
  await writeFile(temporary, bytes)
  await rename(temporary, path)
}

/** Removes the files of `dir` (recursively) that the build did not make: a language removed from `src/locales`. */
const prune = async (dir, made) => {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => [])
  for (const entry of entries) {
    const path = join(entry.parentPath, entry.name)
    if (entry.isFile() && !made.has(path)) await rm(path, { force: true })
  }
}

export const build = async () => {
  await mkdir(here("./dist"), { recursive: true })
  const locales = (await readdir(here("./src/locales"))).filter((file) => file.endsWith(".ts"))
  const result = await esbuild({
    entryPoints: {
      widget: here("./src/index.ts"),
      frame: here("./src/frame.ts"),
      launcher: here("./src/launcher.ts"),
      updates: here("./src/updates.ts"),
      suggestions: here("./src/suggestions.ts"),
      accent: here("./src/accent.ts"),
      ...Object.fromEntries(locales.map((file) => [`locales/${file.slice(0, -3)}`, here(`./src/locales/${file}`)]))
    },
    outdir: here("./dist"),
    bundle: true,
    format: "esm",
    platform: "browser",
    target: ["es2022", "chrome111", "firefox113", "safari16.4"],
    minify: true,
    legalComments: "none",
    // Messages as they are, not as \u escapes: smaller, and the file is served as UTF-8.
    charset: "utf8",
    plugins: [minifiedCss],
    metafile: true,
    write: false,
    logLevel: "warning"
  })
  for (const file of result.outputFiles) await put(file.path, file.contents)
  await prune(here("./dist/locales"), new Set(result.outputFiles.map((file) => file.path)))
  const embed = await esbuild({
    entryPoints: [here("./src/embed.ts")],
    outfile: here("./dist/embed.js"),
    bundle: true,
    format: "iife",
    platform: "browser",
    target: ["es2022", "chrome111", "firefox113", "safari16.4"],
    minify: true,
    legalComments: "none",
    charset: "utf8",
    write: false,
    logLevel: "warning"
  })
  for (const file of embed.outputFiles) await put(file.path, file.contents)
  // Each stylesheet as the bundles inline it, for the hashes in the frame's Content-Security-Policy.
  const styles = new Set()
  for (const name of ["styles", "updates"]) {
    const { code } = await transform(await readFile(here(`./src/${name}.css`), "utf8"), { loader: "css", minify: true })
    styles.add(here(`./dist/styles/${name}.css`))
    await put(here(`./dist/styles/${name}.css`), code.trim())
  }
  await prune(here("./dist/styles"), styles)
  await put(here("./dist/frame.html"), await readFile(here("./frame.html")))
  await put(here("./dist/index.html"), await readFile(here("./demo.html")))
  return { ...result, embed }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await build()
