/**
 * Writes `dist/build-info.json`: the server's version and the commit it was
 * built from, which `hearken_build_info` reports (issue 29). The commit is
 * `HEARKEN_COMMIT` when set (a build from a tarball, or a CI that knows
 * it), else `git rev-parse HEAD` of this checkout, else `unknown`.
 * `npm run build` runs it after `tsc -b`.
 */
import { execFileSync } from "node:child_process"
import { mkdir, readFile, writeFile } from "node:fs/promises"
import { fileURLToPath } from "node:url"

const here = (path) => fileURLToPath(new URL(path, import.meta.url))

const commit = () => {
  const given = process.env["HEARKEN_COMMIT"]?.trim()
  if (given) return given
  try {
    return execFileSync("git", ["rev-parse", "HEAD"], { cwd: here("."), encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim()
  } catch {
    return "unknown"
  }
}

const { version } = JSON.parse(await readFile(here("package.json"), "utf8"))
await mkdir(here("dist"), { recursive: true })
const info = JSON.stringify({ version, commit: commit() }) + "\n"
// Unchanged builds leave the file alone.
const previous = await readFile(here("dist/build-info.json"), "utf8").catch(() => "")
if (previous !== info) await writeFile(here("dist/build-info.json"), info)
