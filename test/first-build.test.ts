import { execFile } from "node:child_process"
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

/**
 * Issue 29: on a fresh clone the first build takes about a minute, and every command that builds
 * first says so (scripts/first-build-notice.mjs, run by `npm start`, `npm run seed`, `npm run
 * worker` and `npm run webhooks` before their build). The script is run as npm runs it: from the
 * repository's root, here a temporary one with or without the built server.
 */

const run = promisify(execFile)
const root = join(import.meta.dirname, "..")
const script = join(root, "scripts", "first-build-notice.mjs")
const notice = "hearken: building it the first time (about a minute)…\n"

let cwd = ""
beforeAll(async () => {
  cwd = await mkdtemp(join(tmpdir(), "hearken-first-build-"))
})
afterAll(() => cwd === "" ? undefined : rm(cwd, { recursive: true, force: true }))

const notify = () => run(process.execPath, [script], { cwd })

describe("the first-build notice", () => {
  it("says the build takes about a minute when the server is not built, on stderr", async () => {
    expect(await notify()).toEqual({ stdout: "", stderr: notice })
  })

  it("says nothing once the server is built", async () => {
    await mkdir(join(cwd, "packages", "server", "dist"), { recursive: true })
    await writeFile(join(cwd, "packages", "server", "dist", "main.js"), "")
    expect(await notify()).toEqual({ stdout: "", stderr: "" })
  })

  it("comes before the build in each command that builds first: start, seed, worker, webhooks", async () => {
    const { scripts } = JSON.parse(await readFile(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> }
    for (const name of ["start", "seed", "worker", "webhooks"]) {
      expect(scripts[name]!.startsWith("node scripts/first-build-notice.mjs && npm run build --silent && ")).toBe(true)
    }
  })
})
