import { execFile } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { mkdtemp, truncate, writeFile } from "node:fs/promises"
import { createServer, type Server, type Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { Cause } from "effect"
import { Migrator, SqlError } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startupFailureLine } from "../packages/server/src/startup-failure.js"
import { createDatabase, type TestDatabase } from "./support/database.js"
import { freePort, spawnServer, type ServerProcess, waitForHealth } from "./support/process.js"
import { eventually } from "./support/wait.js"

/**
 * A start-up that cannot proceed prints exactly one line on stderr and exits
 * 1: no stack, no secret. (test/embedded.test.ts has more bad variables and
 * the second server on one PGLITE_DIR; here stderr is read apart from stdout.)
 */

const password = "hunter2-Pa55"

/** What DASHBOARD_ORIGIN and PUBLIC_URL must be (test/config-audit.test.ts has every variable). */
const origin = "an http(s) origin: scheme, host and optional port, one origin (not a list), " +
  "without a path, query, fragment or user name (e.g. https://feedback.example.com)"
const run = promisify(execFile)

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

    // One origin: a list written as one value parsed as a URL whose host is `a.com,https`, and was read as that (issue 29).
    it.each([
      ["https://a.com,https://b.com", "https://a.com,https//b.com"],
      ["https://app.example/admin", "https://app.example/admin"]
    ])("DASHBOARD_ORIGIN=%s", async (value, shown) => {
      const result = await failedStart({ PGLITE_DIR: "memory", DASHBOARD_ORIGIN: value })
      expect(result.stderr).toBe(`hearken: Invalid configuration: DASHBOARD_ORIGIN must be ${origin}, got "${shown}"\n`)
      expect(result.code).toBe(1)
    })

    // A list written with commas would be one source, and a semicolon would start another directive.
    it.each(["https://a.example,https://b.example", "https://a.example; script-src *", "'none' https://a.example"])(
      "WIDGET_FRAME_ANCESTORS=%s",
      async (value) => {
        const line = `hearken: Invalid configuration: WIDGET_FRAME_ANCESTORS must be CSP frame-ancestors sources separated by spaces, ` +
          `e.g. * or https://shop.example https://*.shop.example, or 'none', got "${value}"`
        expectOneLine(await failedStart({ PGLITE_DIR: "memory", WIDGET_FRAME_ANCESTORS: value }), new RegExp(`^${line.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}$`))
      }
    )
  })
})

/**
 * Cases that once hung, spun, aborted or printed a credential: each gives its one line within
 * 5 s. One at a time, so that the time measured is the server's own, not its neighbours'.
 */
describe("configuration: one line within 5 s, no credential printed", { timeout: 60_000 }, () => {
  /** Pieces of a password with the characters that end a URL's user info early: none may be printed. */
  const pieces = ["Zq9kR", "Xw8jT", "Yv7hU", "Uu6gV"]
  const raw = `${pieces[0]}/${pieces[1]}#${pieces[2]}?${pieces[3]}`
  const encoded = `${pieces[0]}%2F${pieces[1]}%40${pieces[2]}%23${pieces[3]}`

  const expectLine = (result: Awaited<ReturnType<typeof finish>>, line: string) => {
    expect(result.hung).toBe(false)
    expect(result.stderr).toBe(`${line}\n`)
    expect(result.code).toBe(1)
    expect(result.ms).toBeLessThan(5000)
    for (const piece of [...pieces, password]) expect(result.stdout + result.stderr).not.toContain(piece)
  }

  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "hearken-config-"))
  })

  const expected = {
    DATABASE_URL: { scheme: "postgres", must: "a postgres:// or postgresql:// URL", secret: true },
    REDIS_URL: { scheme: "redis", must: "a redis:// or rediss:// URL", secret: true },
    EMBEDDINGS_URL: { scheme: "http", must: "an http(s) URL", secret: false },
    PUBLIC_URL: { scheme: "https", must: "an http(s) URL", secret: false },
    DASHBOARD_ORIGIN: { scheme: "https", must: origin, secret: false },
    OTEL_EXPORTER_OTLP_ENDPOINT: { scheme: "http", must: "an http(s) URL", secret: false }
  } as const

  describe.each(Object.entries(expected))("%s", (variable, { scheme, must, secret }) => {
    const invalid = (got?: string) =>
      `hearken: Invalid configuration: ${variable} must be ${must}${got === undefined || secret ? "" : `, got "${got}"`}`
    it.each([
      // `/`, `#` or `?` in a password end the user info early: the URL does not parse, and nothing of it is shown.
      ["a password holding / # ?, as written", `${scheme}://admin:${raw}@db.example:5432/x`, invalid()],
      ["no scheme: the user reads as one", `admin:${raw}@db.example`, invalid()],
      ["another scheme, the password percent-encoded, a token in the query", `ftp://admin:${encoded}@db.example/x?token=${pieces[3]}`,
        invalid("ftp://…@db.example/x?…")]
    ])("%s", async (_, value, line) => {
      expectLine(await failedStart({ PGLITE_DIR: "memory", [variable]: value }), line)
    })
  })

  it("a running server prints no credential of its valid URLs, whatever fails, even at LOG_LEVEL=debug", async () => {
    const db = await createDatabase()
    try {
      const withPassword = (url: string) => {
        const parsed = new URL(url)
        parsed.password = encoded
        return parsed.toString()
      }
      const server = spawnServer({
        // Trust authentication: the password is sent, and ignored.
        DATABASE_URL: withPassword(db.url),
        // Nothing listens on port 1: the limiter and the exporter fail, and say so.
        REDIS_URL: `redis://admin:${encoded}@127.0.0.1:1/0`,
        // (PUBLIC_URL, DASHBOARD_ORIGIN and OTEL_EXPORTER_OTLP_ENDPOINT refuse user info: test/config-audit.test.ts.)
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:1/otlp",
        OTEL_EXPORTER_OTLP_HEADERS: `authorization=Bearer%20${pieces[1]}`,
        OTEL_BSP_SCHEDULE_DELAY: "100",
        PUBLIC_URL: "https://feedback.example",
        DASHBOARD_ORIGIN: "https://app.example",
        EMBEDDINGS_URL: "http://127.0.0.1:1/v1",
        EMBEDDINGS_API_KEY: `sk-${pieces[2]}`,
        LOG_LEVEL: "debug"
      }, await freePort())
      try {
        await waitForHealth(server.origin, 60_000)
        await fetch(`${server.origin}/boards?organizationId=org_x`)
        await fetch(`${server.origin}/suggestions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ organizationId: "org_x", boardId: "b_x", title: "Dark mode" })
        })
        await eventually("the failures to be logged", async () =>
          /Redis/.test(server.output()) && /Traces: dropping spans/.test(server.output()) || undefined, { timeoutMs: 30_000 })
      } finally {
        server.child.kill("SIGTERM")
        await server.exited
      }
      for (const piece of pieces) expect(server.output()).not.toContain(piece)
    } finally {
      await db.drop()
    }
  })

  it("OTEL_EXPORTER_OTLP_ENDPOINT=http://user:pa/ssword@host/…: nothing of the value", async () => {
    expectLine(
      await failedStart({ PGLITE_DIR: "memory", OTEL_EXPORTER_OTLP_ENDPOINT: `http://user:${pieces[0]}/${pieces[1]}@collector.example/v1` }),
      "hearken: Invalid configuration: OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL"
    )
  })

  it("EMBEDDINGS_URL with user:password@ is refused, pointing to EMBEDDINGS_API_KEY", async () => {
    expectLine(
      await failedStart({ PGLITE_DIR: "memory", EMBEDDINGS_URL: `https://key:${encoded}@api.example/v1` }),
      'hearken: Invalid configuration: EMBEDDINGS_URL must be a URL without a user name or password (give the key as EMBEDDINGS_API_KEY), got "https://…@api.example/v1"'
    )
  })

  it("METRICS_PORT equal to PORT on the same host is refused, naming METRICS_PORT", async () => {
    const port = await freePort()
    expectLine(
      await failedStart({ PGLITE_DIR: "memory", PORT: String(port), METRICS_PORT: String(port) }),
      `hearken: Invalid configuration: METRICS_PORT must differ from PORT (${port}) on the same host`
    )
    expectLine(
      await failedStart({ PGLITE_DIR: "memory", PORT: String(port), METRICS_PORT: String(port), METRICS_HOST: "0.0.0.0" }),
      `hearken: Invalid configuration: METRICS_PORT must differ from PORT (${port}) on the same host`
    )
  })

  it("SUGGESTIONS_STATEMENT_TIMEOUT_MS above DATABASE_STATEMENT_TIMEOUT_MS is refused", async () => {
    expectLine(
      await failedStart({ PGLITE_DIR: "memory", DATABASE_STATEMENT_TIMEOUT_MS: "800", SUGGESTIONS_STATEMENT_TIMEOUT_MS: "801" }),
      'hearken: Invalid configuration: SUGGESTIONS_STATEMENT_TIMEOUT_MS must be a number of milliseconds between 1 and DATABASE_STATEMENT_TIMEOUT_MS (800), got "801"'
    )
  })

  it("PGLITE_DIR=/proc/x (where Node's recursive mkdir spins for ever)", async () => {
    expectLine(
      await failedStart({ PGLITE_DIR: "/proc/x" }, 20_000),
      "hearken: the embedded database did not start (ENOENT: no such file or directory, mkdir '/proc/x'): check PGLITE_DIR"
    )
  })

  describe("SEED_FILE that is not a regular file of at most 32 MiB", () => {
    it.each([
      ["/dev/zero", async () => "/dev/zero", "a regular file, not a device or FIFO"],
      ["a FIFO", async () => {
        const fifo = join(dir, "seed.fifo")
        await run("mkfifo", [fifo])
        return fifo
      }, "a regular file, not a device or FIFO"],
      ["a directory", async () => dir, "a file, not a directory"],
      ["a file past 32 MiB", async () => {
        const huge = join(dir, "huge.json")
        await writeFile(huge, "")
        await truncate(huge, 32 * 1024 * 1024 + 1)
        return huge
      }, "a file of at most 32 MiB"]
    ])("%s", async (_, make, must) => {
      const file = await make()
      expectLine(
        await failedStart({ PGLITE_DIR: "memory", SEED_FILE: file }, 20_000),
        `hearken: Invalid configuration: SEED_FILE must be ${must}, got ${JSON.stringify(file)}`
      )
    })
  })
})

/** Whether process `pid` is gone (or a zombie nobody has reaped yet). */
const isGone = (pid: number) => {
  try {
    process.kill(pid, 0)
  } catch {
    return true
  }
  return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"))
}

describe("the embedded database process during start-up", { timeout: 60_000 }, () => {
  /** A server on a fresh PGLITE_DIR, and its embedded database's pid once that has locked the directory (PGlite still loading). */
  const starting = async () => {
    const dir = join(await mkdtemp(join(tmpdir(), "hearken-embedded-")), "db")
    const server = spawnServer({ PGLITE_DIR: dir, LOG_LEVEL: "info" }, await freePort())
    const lock = join(dir, "hearken.lock")
    const child = await eventually("the embedded database to lock its directory", async () => {
      const pid = existsSync(lock) ? Number(readFileSync(lock, "utf8")) : 0
      return pid > 0 ? pid : undefined
    }, { everyMs: 10, timeoutMs: 30_000 })
    return { server, child, lock }
  }

  it("SIGTERM is honoured while the embedded database starts, even one that never answers", async () => {
    const { server, child } = await starting()
    // Stuck: it will never report its port, nor run a signal handler.
    process.kill(child, "SIGSTOP")
    const sent = performance.now()
    server.child.kill("SIGTERM")
    const guard = setTimeout(() => server.child.kill("SIGKILL"), 20_000)
    const code = await server.exited
    clearTimeout(guard)
    expect(server.child.signalCode).toBe(null)
    expect(code).toBe(0)
    expect(performance.now() - sent).toBeLessThan(5000)
    await eventually("the embedded database to be gone", async () => isGone(child) || undefined, { timeoutMs: 5000 })
  })

  it("the embedded database does not outlive a killed server: it releases its lock and exits", async () => {
    const { server, child, lock } = await starting()
    server.child.kill("SIGKILL")
    await server.exited
    await eventually("the embedded database to be gone", async () => isGone(child) || undefined, { timeoutMs: 10_000 })
    expect(existsSync(lock)).toBe(false)
    // It shares the server's stderr: it went quietly.
    expect(server.output()).not.toMatch(/Error|^\s+at /m)
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

  it("removes a password holding / # ? @ or percent-escapes, and the user info of every URL variable, parsed or not", () => {
    const oddEnv = {
      REDIS_URL: "redis://u:Zq9kR/Xw8jT@cache",
      OTEL_EXPORTER_OTLP_ENDPOINT: "https://ghp_tok3nYv7hU0123456@collector.example",
      PUBLIC_URL: "https://admin:Uu6gV%2Fa%40b@feedback.example",
      OTEL_EXPORTER_OTLP_HEADERS: "api-key=Kk5fW%3D"
    }
    const line = (message: string) => startupFailureLine(Cause.die(new Error(message)), oddEnv)
    expect(line("could not use http://user:pa/ss#wo?rd@host/x")).toBe("start-up failed: could not use http://user:***@host/x")
    expect(line("auth failed for Zq9kR/Xw8jT and ghp_tok3nYv7hU0123456")).toBe("start-up failed: auth failed for *** and ***")
    // A user name alone is no secret: removing it everywhere would garble the line.
    expect(startupFailureLine(Cause.die(new Error("role admin: no")), { DATABASE_URL: "postgres://admin@db/x" })).toBe("start-up failed: role admin: no")
    expect(line("sent Uu6gV/a@b and Uu6gV%2Fa%40b, with Kk5fW= and Kk5fW%3D")).toBe("start-up failed: sent *** and ***, with *** and ***")
    // A path is not a URL's user info.
    expect(line("at fail (file:///app/node_modules/@effect/sql-pg/dist/PgConnection.js:1:2)"))
      .toBe("start-up failed: at fail (file:///app/node_modules/@effect/sql-pg/dist/PgConnection.js:1:2)")
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
