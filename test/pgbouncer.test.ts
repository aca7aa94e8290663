import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createDatabase, pooledUrl } from "./support/database.js"
import { baseFixture, fixturePost } from "./support/fixtures.js"
import { endpoint, Receiver, webhookOrganization } from "./support/receiver.js"
import { getJson, postJson, startServerOn, type TestServer, useServer, writeFixtureFile } from "./support/server.js"
import { freePort, spawnServer } from "./support/process.js"
import { holding, waitingForLocks } from "./support/faults.js"
import { eventually } from "./support/wait.js"

/**
 * Hearken behind PgBouncer in transaction mode (issue 30; docs/operations.md: "Behind PgBouncer"),
 * the PgBouncer that scripts/prepare-services.sh starts on 127.0.0.1:6432 (`TEST_PGBOUNCER_PORT`).
 *
 * First, this file's own tests: the statement timeouts are enforced through the pooler (the
 * statement is cancelled on the server, not left waiting), the webhook worker polls where it has no
 * session to LISTEN on, and listens on `DATABASE_DIRECT_URL` where it has one. Then the
 * acceptance-level files run again, as they are, with every server's `DATABASE_URL` through
 * PgBouncer (`TEST_DATABASE_VIA=pgbouncer`, test/support/database.ts). Any other test file runs
 * the same way with `TEST_DATABASE_VIA=pgbouncer npx vitest run test/FILE.test.ts`.
 */

const via = (mode: "pgbouncer" | "pgbouncer-only") => {
  let before: string | undefined
  beforeAll(() => {
    before = process.env["TEST_DATABASE_VIA"]
    process.env["TEST_DATABASE_VIA"] = mode
  })
  afterAll(() => {
    if (before === undefined) delete process.env["TEST_DATABASE_VIA"]
    else process.env["TEST_DATABASE_VIA"] = before
  })
}

/** A server on a fresh database, its `DATABASE_URL` through PgBouncer and `env` added. */
const startPooled = async (fixture: unknown, env: Record<string, string>) => {
  const db = await createDatabase()
  return startServerOn(db, {
    DATABASE_URL: pooledUrl(db.url),
    DATABASE_POOL_MODE: "transaction",
    SEED_FILE: await writeFixtureFile(fixture),
    ...env
  }, true)
}

/** Sessions on the test database that LISTEN for new webhook deliveries. */
const listening = (server: TestServer) =>
  server.db.query<{ n: number }>((sql) =>
    sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN %hearken_webhooks%'`
  ).then((rows) => rows[0]!.n)

const timed = async <A>(f: () => Promise<A>) => {
  const start = performance.now()
  const value = await f()
  return { value, ms: performance.now() - start }
}

describe("the statement timeouts, through PgBouncer in transaction mode", () => {
  const fixture = baseFixture()
  fixture.organizations[0]!.posts = [fixturePost("p_dark", "Dark mode", "<p>Please add a dark theme</p>")]

  describe("DATABASE_STATEMENT_TIMEOUT_MS", () => {
    const server = useServer(() => startPooled(fixture, { DATABASE_STATEMENT_TIMEOUT_MS: "1000" }))

    it("PgBouncer refuses statement_timeout as a startup parameter: without DATABASE_POOL_MODE the server stops, saying what to set", async () => {
      const db = await createDatabase()
      try {
        const child = spawnServer({ DATABASE_URL: pooledUrl(db.url), LOG_LEVEL: "info" }, await freePort())
        expect(await child.closed).toBe(1)
        expect(child.stderr().trim()).toBe(
          "hearken: Cannot reach or use the database (unsupported startup parameter: statement_timeout): " +
            "DATABASE_URL looks like a pooler in transaction mode; set DATABASE_POOL_MODE=transaction"
        )
      } finally {
        await db.drop()
      }
    })

    it("a DATABASE_DIRECT_URL of its own says DATABASE_URL is a transaction-mode pooler (CONTRACT.md): no DATABASE_POOL_MODE needed", async () => {
      const db = await createDatabase()
      const direct = await startServerOn(db, {
        DATABASE_URL: pooledUrl(db.url),
        DATABASE_DIRECT_URL: db.url,
        SEED_FILE: await writeFixtureFile(fixture)
      }, true)
      try {
        const res = await getJson(`${direct.api}/boards?organizationId=org_acme`)
        expect(res.status).toBe(200)
        expect((res.body as Array<{ id: string }>).map((b) => b.id)).toContain("b_feat")
      } finally {
        await direct.close()
      }
    })

    it("cancels a statement past it on the server, and the request answers 500 InternalServerError at the timeout", async () => {
      // Every answer of /boards reads the organization's version row first: it waits on the lock.
      await holding(server, "organization_versions", async () => {
        const { value: res, ms } = await timed(() => getJson(`${server.api}/boards?organizationId=org_acme`))
        expect(res.status).toBe(500)
        expect(res.body).toEqual({ _tag: "InternalServerError", message: expect.any(String) })
        expect(res.body.message).not.toMatch(/statement|timeout|cancel|organization_versions|select/i)
        expect(ms).toBeGreaterThanOrEqual(950)
        expect(ms).toBeLessThan(4_000)
        // Enforced, not abandoned: while the lock is still held, nothing of the server waits on it.
        expect(await waitingForLocks(server)).toBe(0)
      })
      expect((await getJson(`${server.api}/boards?organizationId=org_acme`)).status).toBe(200)
    })

    it("would otherwise wait: the same read waits on the lock as long as it is held", async () => {
      // The control for the test above: with the lock held, a statement of the server's does wait.
      await holding(server, "organization_versions", async () => {
        const pending = getJson(`${server.api}/boards?organizationId=org_acme`)
        await eventually("the read to wait on the lock", async () => (await waitingForLocks(server)) === 1 || undefined)
        expect((await pending).status).toBe(500)
      })
    })
  })

  describe("SUGGESTIONS_STATEMENT_TIMEOUT_MS", () => {
    // The database's own limit is a minute: only the suggestions' limit can end the wait within the test's time.
    const server = useServer(() =>
      startPooled(fixture, { DATABASE_STATEMENT_TIMEOUT_MS: "60000", SUGGESTIONS_STATEMENT_TIMEOUT_MS: "300" })
    )

    it("cancels a suggestion's statement past it, and the answer gives way to [] (decision 0039)", async () => {
      await holding(server, "posts", async () => {
        const { value: res, ms } = await timed(() =>
          postJson(`${server.api}/suggestions`, { organizationId: "org_acme", boardId: "b_feat", title: "Dark mode", content: "" })
        )
        expect(res.status).toBe(200)
        expect(res.body).toEqual([])
        expect(ms).toBeGreaterThanOrEqual(250)
        expect(ms).toBeLessThan(3_000)
        expect(await waitingForLocks(server)).toBe(0)
      })
      const after = await postJson(`${server.api}/suggestions`, {
        organizationId: "org_acme", boardId: "b_feat", title: "Dark mode", content: ""
      })
      expect(after.status).toBe(200)
      expect(after.body.map((m: { id: string }) => m.id)).toEqual(["p_dark"])
    })
  })
})

describe("webhooks through PgBouncer", () => {
  const receiver = Receiver.start()
  afterAll(async () => (await receiver).close())
  const fixtureFor = async () => {
    const r = await receiver
    const fixture = baseFixture()
    ;(fixture.organizations as Array<Record<string, unknown>>).push(
      webhookOrganization("org_hooks", [endpoint("wh_main", r.url("/main"))])
    )
    return fixture
  }
  const deliverOne = async (server: TestServer) => {
    const r = await receiver
    const before = r.received.filter((req) => req.path === "/main").length
    const res = await postJson(`${server.api}/feedback`, {
      organizationId: "org_hooks", boardId: "b_org_hooks", title: "Hook me", content: "<p>body</p>"
    })
    expect(res.status).toBe(200)
    await eventually("the delivery", async () => r.received.filter((req) => req.path === "/main").length > before || undefined)
    return res.body.id as string
  }
  const env = { WEBHOOK_ALLOW_PRIVATE_URLS: "true", WEBHOOK_TIMEOUT_MS: "1000" }

  describe("without DATABASE_DIRECT_URL", () => {
    const server = useServer(async () => startPooled(await fixtureFor(), env))

    it("delivers by polling, and LISTENs nowhere (a LISTEN through the pooler would hear nothing)", async () => {
      await deliverOne(server)
      expect(await listening(server)).toBe(0)
    })
  })

  describe("with DATABASE_DIRECT_URL", () => {
    const server = useServer(async () => {
      const db = await createDatabase()
      return startServerOn(db, {
        DATABASE_URL: pooledUrl(db.url),
        DATABASE_POOL_MODE: "transaction",
        DATABASE_DIRECT_URL: db.url,
        SEED_FILE: await writeFixtureFile(await fixtureFor()),
        ...env
      }, true)
    })

    it("LISTENs on the direct connection and delivers", async () => {
      await eventually("the worker to LISTEN", async () => (await listening(server)) === 1 || undefined)
      await deliverOne(server)
    })
  })
})

// The acceptance-level files, as they are, with DATABASE_URL through PgBouncer and DATABASE_DIRECT_URL
// for the migrations and LISTEN. (Each file is imported once: its tests run here in this mode.)
describe("acceptance files through PgBouncer (TEST_DATABASE_VIA=pgbouncer)", async () => {
  via("pgbouncer")
  await import("./boards.test.js")
  await import("./updates.test.js")
  await import("./feedback.test.js")
  await import("./suggestions.test.js")
  await import("./idempotency.test.js")
  await import("./webhooks.test.js")
  await import("./suggestions-backfill.test.js")
})

describe("acceptance files through PgBouncer alone (TEST_DATABASE_VIA=pgbouncer-only)", async () => {
  via("pgbouncer-only")
  await import("./fixtures.test.js")
  await import("./embeddings.test.js")
})
