import { mkdtemp, writeFile } from "node:fs/promises"
import { createServer, type Server, type Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Cause } from "effect"
import { Migrator, SqlError } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startupFailureLine } from "../packages/server/dist/startup-failure.js"
import { createDatabase, type TestDatabase } from "./support/database.js"
import { freePort, spawnServer, type ServerProcess, waitForHealth } from "./support/process.js"

/**
 * A start-up that cannot proceed prints exactly one line on stderr and exits
 * 1: no stack, no secret. (test/embedded.test.ts has more bad variables and
 * the second server on one PGLITE_DIR; here stderr is read apart from stdout.)
 */

const password = "hunter2-Pa55"

/** Runs the server with `env` until it exits (at most `guardMs`: a hang fails) and yields what it printed. */
const failedStart = async (env: Record<string, string>, guardMs = 60_000) => {
  const server = spawnServer({ LOG_LEVEL: "info", ...env }, await freePort())
  return finish(server, guardMs)
}

const finish = async (server: ServerProcess, guardMs: number) => {
  const started = performance.now()
  const timer = setTimeout(() => server.child.kill("SIGKILL"), guardMs)
  const code = await server.closed
  clearTimeout(timer)
  const ms = performance.now() - started
  return { code, stdout: server.stdout(), stderr: server.stderr(), ms, hung: server.child.signalCode === "SIGKILL" }
}

/** Exactly one line on stderr, matching `line`; no stack and no password anywhere. */
const expectOneLine = (result: Awaited<ReturnType<typeof finish>>, line: RegExp) => {
  expect(result.hung).toBe(false)
  expect(result.code).toBe(1)
  expect(result.stderr).toMatch(/^hearken: [^\n]+\n$/)
  expect(result.stderr.trimEnd()).toMatch(line)
  for (const output of [result.stdout, result.stderr]) {
    expect(output).not.toMatch(/^\s+at /m)
    expect(output).not.toContain(password)
    expect(output).not.toContain(encodeURIComponent(password))
  }
}

// One concurrent suite: each case is a process that mostly loads modules, so they overlap well; the slowest first.
describe.concurrent("start-up stops with one line on stderr and exit code 1", { timeout: 90_000 }, () => {
  describe("a server that accepts connections and never answers", () => {
    let silent: Server
    const sockets = new Set<Socket>()
    beforeAll(async () => {
      silent = createServer((socket) => {
        sockets.add(socket)
        socket.on("error", () => undefined)
      })
      await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve))
    })
    afterAll(async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => silent.close(resolve))
    })

    it("gives up after its connect timeouts instead of hanging", async () => {
      const address = silent.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      // The hang guard (40 s): one connection attempt (an unreachable database is not retried) with its timeout.
      const result = await failedStart({ DATABASE_URL: `postgres://postgres:${password}@127.0.0.1:${port}/x` }, 40_000)
      expectOneLine(result, /^hearken: Cannot reach or use the database \(Connection timed out\): check DATABASE_URL$/)
      expect(sockets.size).toBe(1)
      console.info(`a silent database: start-up gave up after ${Math.round(result.ms)} ms and ${sockets.size} connection(s)`)
    })
  })

  describe("a locked PGLITE_DIR", () => {
    it("a second server on the directory a running one uses exits 1; the first keeps serving", async () => {
      const dir = join(await mkdtemp(join(tmpdir(), "hearken-startup-")), "db")
      const first = spawnServer({ PGLITE_DIR: dir, LOG_LEVEL: "warn" }, await freePort())
      try {
        await waitForHealth(first.origin, 60_000)
        const second = await failedStart({ PGLITE_DIR: dir })
        const escaped = dir.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")
        // The lock's holder is the first server's embedded database process.
        expectOneLine(second, new RegExp(`^hearken: PGLITE_DIR ${escaped} is in use by process \\d+; stop it or choose another PGLITE_DIR$`))
        expect((await fetch(`${first.origin}/health`)).status).toBe(200)
      } finally {
        first.child.kill("SIGTERM")
        expect(await first.exited).toBe(0)
      }
    })

    it("a PGLITE_DIR that is a file", async () => {
      const dir = await mkdtemp(join(tmpdir(), "hearken-startup-"))
      await writeFile(join(dir, "file"), "")
      expectOneLine(
        await failedStart({ PGLITE_DIR: join(dir, "file") }),
        /^hearken: the embedded database did not start \(EEXIST: .*\): check PGLITE_DIR$/
      )
    })
  })

  describe("a database that cannot be used", () => {
    let db: TestDatabase
    beforeAll(async () => {
      db = await createDatabase()
    })
    afterAll(() => db?.drop())

    it("refused connection (postgres://postgres:PASSWORD@127.0.0.1:1/x): the password is not printed", async () => {
      expectOneLine(
        await failedStart({ DATABASE_URL: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:1/x` }),
        /^hearken: Cannot reach or use the database \(connect ECONNREFUSED 127\.0\.0\.1:1\): check DATABASE_URL$/
      )
    })

    it("with LOG_LEVEL=debug the line comes first and the whole cause follows, still without the password", async () => {
      const result = await failedStart({ DATABASE_URL: `postgres://postgres:${password}@127.0.0.1:1/x`, LOG_LEVEL: "debug" })
      expect(result.code).toBe(1)
      expect(result.stderr.split("\n")[0]).toBe("hearken: Cannot reach or use the database (connect ECONNREFUSED 127.0.0.1:1): check DATABASE_URL")
      expect(result.stderr).toMatch(/^\s+at /m)
      expect(result.stdout + result.stderr).not.toContain(password)
    })

    it("a database name that does not exist on a running server", async () => {
      const url = new URL(db.url)
      url.password = password
      url.pathname = "/hearken_no_such_database"
      expectOneLine(
        await failedStart({ DATABASE_URL: url.toString() }),
        /^hearken: Cannot reach or use the database \(database "hearken_no_such_database" does not exist\): check DATABASE_URL$/
      )
    })

    it("a PORT in use", async () => {
      const taken = createServer()
      await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve))
      try {
        const address = taken.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        expectOneLine(
          await failedStart({ DATABASE_URL: db.url, PORT: String(port) }),
          /^hearken: cannot listen: the address is in use \(check PORT and HOST\)$/
        )
      } finally {
        await new Promise((resolve) => taken.close(resolve))
      }
    })
  })

  describe("a bad variable, named", () => {
    const invalid = (variable: string, expected: string) =>
      new RegExp(`^hearken: Invalid configuration: ${variable} must be ${expected.replace(/[/()]/g, "\\$&")}$`)
    const portLine = (value: string) => invalid("PORT", `a port number between 0 and 65535, got "${value}"`)
    const urlLine = invalid("DATABASE_URL", "a postgres:// or postgresql:// URL")

    it.each([
      ["PORT=abc", { PORT: "abc", DATABASE_URL: `postgres://postgres:${password}@127.0.0.1:1/x` }, portLine("abc")],
      ["PORT=70000", { PORT: "70000" }, portLine("70000")],
      ["DATABASE_URL=notaurl", { DATABASE_URL: "notaurl" }, urlLine],
      ["DATABASE_URL=postgres://", { DATABASE_URL: "postgres://" }, urlLine],
      ["a DATABASE_URL with a password and no host", { DATABASE_URL: `postgres://postgres:${password}@` }, urlLine],
      ["a DATABASE_URL with a password and a port past 65535", { DATABASE_URL: `postgresql://postgres:${password}@db:70000/x` }, urlLine]
    ])("%s", async (_, env, line) => {
      // `env` overrides the PORT spawnServer sets.
      expectOneLine(await failedStart({ PGLITE_DIR: "memory", ...env }), line)
    })
  })
})

describe("the line for any other failure", () => {
  const env = { DATABASE_URL: `postgres://app:${password}@db.internal:5432/hearken`, EMBEDDINGS_API_KEY: "sk-secret-key-123" }

  it("is one line with the root cause, without a stack, a password or an API key", () => {
    const error = new Error(`could not use postgres://app:${password}@db.internal:5432/hearken\n    at somewhere (file.js:1:1)`)
    const line = startupFailureLine(Cause.die(error), env)
    expect(line).toBe("start-up failed: could not use postgres://app:***@db.internal:5432/hearken at somewhere (file.js:1:1)")
    expect(startupFailureLine(Cause.die(new Error("upstream said sk-secret-key-123")), env)).toBe("start-up failed: upstream said ***")
    expect(startupFailureLine(Cause.die("a string"), env)).toBe("start-up failed: a string")
  })

  it("names the migration that failed and why", () => {
    const cause = new SqlError.SqlError({
      reason: new SqlError.SqlSyntaxError({ cause: new Error('relation "posts_search_idx" does not exist'), message: "PgConnection: Query failed", operation: "query" })
    })
    const migration = new Migrator.MigrationError({ kind: "Failed", message: 'Migration "10_example" failed', cause })
    expect(startupFailureLine(Cause.fail(migration), env)).toBe(
      'Cannot migrate the database: Migration "10_example" failed: relation "posts_search_idx" does not exist'
    )
  })
})
