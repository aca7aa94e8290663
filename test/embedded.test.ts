import { spawn } from "node:child_process"
import { mkdtemp } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, type ServerProcess, spawnServer, waitForHealth } from "./support/process.js"

/**
 * README.md's `npm install && npm start`: the install is the test run's own
 * (the repository's dependencies are installed before any test runs); this
 * runs `npm start` as written, with no DATABASE_URL.
 */
describe("npm start, as README.md says", () => {
  it("serves /health and the demo boards with no DATABASE_URL", async () => {
    const port = await freePort()
    const root = join(import.meta.dirname, "..")
    // Under `npm test`, npm_execpath is the npm that runs us; otherwise the one on the PATH.
    const npm = process.env["npm_execpath"]
    const command = npm === undefined ? ["npm", ["start"]] as const : [process.execPath, [npm, "start"]] as const
    const child = spawn(command[0], command[1], {
      cwd: root,
      detached: true,
      stdio: "ignore",
      env: { PATH: process.env["PATH"] ?? "", PORT: String(port), HOST: "127.0.0.1", PGLITE_DIR: "memory" }
    })
    try {
      await waitForHealth(`http://127.0.0.1:${port}`, 60_000)
      const boards = await (await fetch(`http://127.0.0.1:${port}/api/widget/v1/boards?organizationId=org_demo`)).json()
      expect(boards.map((b: { slug: string }) => b.slug)).toEqual(["feature-requests", "bug-reports"])
    } finally {
      // npm does not pass SIGTERM on to its child: signal the whole process group.
      process.kill(-child.pid!, "SIGTERM")
    }
  }, 90_000)
})

describe("the embedded default: no DATABASE_URL", () => {
  let dir: string
  let server: ServerProcess
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "hearken-pglite-"))
    server = spawnServer({ PGLITE_DIR: join(dir, "db") }, await freePort())
    await waitForHealth(server.origin, 60_000)
  }, 90_000)
  afterAll(() => {
    if (server.child.exitCode === null) server.child.kill("SIGKILL")
  })

  it("answers /health and lists the demo boards", async () => {
    expect(await (await fetch(`${server.origin}/health`)).json()).toEqual({ status: "ok" })
    const boards = await (await fetch(`${server.origin}/api/widget/v1/boards?organizationId=org_demo`)).json()
    expect(boards.map((b: { id: string }) => b.id)).toEqual(["b_demo_features", "b_demo_bugs"])
  })

  it("serves all four endpoints on the demo data", async () => {
    const api = `${server.origin}/api/widget/v1`
    const updates = await (await fetch(`${api}/updates?organizationId=org_demo`)).json()
    expect(updates.map((u: { id: string }) => u.id)).toEqual(["u_demo_csv", "u_demo_dark_mode"])
    const post = (path: string, body: unknown) =>
      fetch(`${api}/${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
    const created = await post("feedback", { organizationId: "org_demo", boardId: "b_demo_features", title: "Embedded works", content: "<p>yes</p>" })
    expect(created.status).toBe(200)
    expect((await created.json()).slug).toBe("embedded-works")
    const suggestions = await (await post("suggestions", { organizationId: "org_demo", boardId: "b_demo_features", title: "dark mode", content: "" })).json()
    expect(suggestions[0].id).toBe("p_demo_dark_mode")
  })

  it("refuses a second server on the same PGLITE_DIR with one line", async () => {
    const second = spawnServer({ PGLITE_DIR: join(dir, "db") }, await freePort())
    expect(await second.exited).toBe(1)
    expect(second.output().trim()).toMatch(/^hearken: PGLITE_DIR .* is in use by process \d+; stop it or choose another PGLITE_DIR$/)
  })

  it("stops on SIGTERM with exit code 0 and releases the directory", async () => {
    server.child.kill("SIGTERM")
    expect(await server.exited).toBe(0)
    const again = spawnServer({ PGLITE_DIR: join(dir, "db") }, await freePort())
    try {
      await waitForHealth(again.origin, 60_000)
      const boards = await (await fetch(`${again.origin}/api/widget/v1/boards?organizationId=org_demo`)).json()
      expect(boards).toHaveLength(2)
      const slug = await fetch(`${again.origin}/api/widget/v1/feedback`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ organizationId: "org_demo", boardId: "b_demo_features", title: "Embedded works", content: "" })
      })
      // The post created before the restart is still there, so its slug is taken.
      expect((await slug.json()).slug).toBe("embedded-works-2")
    } finally {
      again.child.kill("SIGTERM")
      expect(await again.exited).toBe(0)
    }
  }, 90_000)
})

describe("start-up refuses a bad environment with one line", () => {
  it.each([
    [{ PORT: "abc" }, /^hearken: Invalid configuration: PORT must be a port number between 0 and 65535, got "abc"$/],
    [{ DATABASE_URL: "mysql://user:hunter2@db/x" }, /^hearken: Invalid configuration: DATABASE_URL must be a postgres:\/\/ or postgresql:\/\/ URL$/],
    [{ TRUST_PROXY: "-1" }, /^hearken: Invalid configuration: TRUST_PROXY must be an integer between 0 and 32, got "-1"$/],
    [{ HTTP_STALL_TIMEOUT_MS: "6000" }, /^hearken: Invalid configuration: HTTP_STALL_TIMEOUT_MS must be a number of milliseconds of at least 1000, more than DATABASE_STATEMENT_TIMEOUT_MS \+ EMBEDDINGS_TIMEOUT_MS \(6500\), and at most 600000, got "6000"$/],
    [{ LOG_LEVEL: "loud" }, /^hearken: Invalid configuration: LOG_LEVEL must be one of/],
    [{ REDIS_URL: "http://user:s3cret@redis" }, /^hearken: Invalid configuration: REDIS_URL must be a redis:\/\/ or rediss:\/\/ URL$/],
    [{ PUBLIC_URL: "not a url" }, /^hearken: Invalid configuration: PUBLIC_URL must be an http\(s\) URL/],
    [{ SUGGESTIONS_MAX_DISTANCE: "3" }, /^hearken: Invalid configuration: SUGGESTIONS_MAX_DISTANCE must be a number between 0 and 2/]
  ])("%o", async (env, line) => {
    const server = spawnServer({ PGLITE_DIR: "memory", ...env }, 0)
    expect(await server.exited).toBe(1)
    const output = server.output().trim()
    expect(output).toMatch(line)
    expect(output.split("\n")).toHaveLength(1)
    expect(output).not.toMatch(/hunter2|s3cret/)
  })

  it("refuses an unreachable DATABASE_URL without leaking its password", async () => {
    const server = spawnServer({ DATABASE_URL: `postgres://postgres:topsecret@127.0.0.1:${await freePort()}/x` }, 0)
    expect(await server.exited).toBe(1)
    expect(server.output()).toMatch(/^hearken: Cannot reach or use the database/)
    expect(server.output()).not.toMatch(/topsecret/)
  })
})
