import { ConfigProvider, Effect, Exit, Fiber, Layer, Option, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as ServerConfig from "../packages/server/src/config/ServerConfig.js"
import * as Database from "../packages/server/src/sql/Database.js"
import * as ReadReplica from "../packages/server/src/sql/ReadReplica.js"
import { startFakeEmbeddings } from "./support/embeddings.js"
import { baseFixture, fixturePost } from "./support/fixtures.js"
import { freePort, processGroup, type ServerProcess } from "./support/process.js"
import {
  checkReplication,
  createReplicatedDatabase,
  pauseReplay,
  replication,
  type ReplicatedDatabase,
  resumeReplay,
  start,
  stop
} from "./support/replication.js"
import { getJson, ids, widgetClient } from "./support/client.js"
import { writeFixtureFile } from "./support/server.js"
import { startPgBouncer } from "./support/pgbouncer.js"
import { type ProxyMode, startProxy } from "./support/tcp-proxy.js"
import { eventually } from "./support/wait.js"

/**
 * `DATABASE_READ_URL` (issue 30; docs/operations.md: "A read replica"): `/boards`, `/updates` and
 * suggestions read on a streaming replica, everything else on the primary. Against the replication
 * pair scripts/prepare-services.sh starts (primary 127.0.0.1:5434, its `pg_basebackup -R` standby
 * 127.0.0.1:5435; test/support/replication.ts), never the 5432 every other file uses: these tests
 * stop and start both. Which server served a read is told by `hearken_db_reads_total{target}`
 * (a row only on one side cannot exist with streaming replication).
 */

await checkReplication()
// Suggestions by meaning too: their statements (a board's background, the nearest posts) read on the replica.
const fake = await startFakeEmbeddings({ dimensions: 16 })

const fixture = baseFixture()
fixture.organizations[0]!.posts = [fixturePost("p_dark", "Dark mode", "<p>Please add a dark theme</p>")]
fixture.organizations[0]!.updates = [{
  id: "u_first",
  title: "First release",
  slug: "first-release",
  content: "<p>Hello</p>",
  excerpt: "Hello",
  publishedAt: "2026-01-10T00:00:00.000Z"
}]

/** The value of one series in a Prometheus text scrape; undefined when it is not there. */
const sample = (text: string, name: string, labels = "") => {
  const line = text.split("\n").find((l) => l.startsWith(`${name}${labels === "" ? "" : `{${labels}}`} `))
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1))
}

let db: ReplicatedDatabase
let metricsPort: number
let env: Record<string, string> = {}
const processes = processGroup(() => env)
let server: ServerProcess

beforeAll(async () => {
  db = await createReplicatedDatabase()
  metricsPort = await freePort()
  env = {
    DATABASE_URL: db.url,
    DATABASE_READ_URL: db.readUrl,
    SEED_FILE: await writeFixtureFile(fixture),
    METRICS_PORT: String(metricsPort),
    EMBEDDINGS_URL: fake.url,
    EMBEDDINGS_DIMENSIONS: "16",
    LOG_LEVEL: "info",
    LOG_FORMAT: "json",
    RATE_LIMIT_MULTIPLIER: "1000"
  }
  server = await processes.start()
  // The seed was written on the primary, and its embedding by the worker: wait for the standby to have both.
  await eventually("the seed and its embedding on the standby", async () => {
    const rows = await db.query<{ n: number }>("replica", (sql) =>
      sql`SELECT count(*)::int AS n FROM post_embeddings WHERE post_id = 'p_dark' AND embedding IS NOT NULL`)
    return rows[0]!.n === 1 || undefined
  })
}, 60_000)

afterAll(async () => {
  processes.killAll()
  await fake.close()
  // Whatever a failed test left: both running, the replica replaying.
  await start("primary").catch(() => undefined)
  await start("replica").catch(() => undefined)
  await resumeReplay().catch(() => undefined)
  await db?.drop()
}, 60_000)

const api = () => `${server.origin}/api/widget/v1`
const scrape = async () => {
  const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
  expect(res.status).toBe(200)
  return res.text()
}
const readsOn = async (target: "replica" | "primary") =>
  sample(await scrape(), "hearken_db_reads_total", `target="${target}"`) ?? 0
const boards = () => getJson(`${api()}/boards?organizationId=org_acme`)
const updates = () => getJson(`${api()}/updates?organizationId=org_acme`)
const suggest = (title: string) => widgetClient(server).suggest({ organizationId: "org_acme", boardId: "b_feat", title, content: "" })

/** The server's JSON log lines whose message has `words`. */
const logLines = (words: string) =>
  server.stdout().split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as { level: string; message: string })
    .filter((l) => typeof l.message === "string" && l.message.includes(words))

const feedback = (title: string) =>
  widgetClient(server).feedback({ organizationId: "org_acme", boardId: "b_feat", title, content: "<p>From the test</p>" })

describe("reads on the replica", () => {
  it("/boards, /updates and suggestions go to the replica; a new post goes to the primary", async () => {
    const [replicaBefore, primaryBefore] = [await readsOn("replica"), await readsOn("primary")]
    expect((await boards()).status).toBe(200)
    expect((await updates()).status).toBe(200)
    const suggested = await suggest("Dark mode")
    expect(suggested.status).toBe(200)
    expect(ids(suggested)).toEqual(["p_dark"])
    expect(await readsOn("replica")).toBeGreaterThanOrEqual(replicaBefore + 3)
    expect(await readsOn("primary")).toBe(primaryBefore)
    const created = await feedback("Written on the primary")
    expect(created.status).toBe(200)
    // The write is not a read: the reads' counters do not move.
    expect(await readsOn("primary")).toBe(primaryBefore)
    expect(sample(await scrape(), "hearken_db_replica_up")).toBe(1)
  })

  it("serves /boards, /updates and suggestions while the primary is stopped; writes answer as without a replica", async () => {
    const before = { boards: (await boards()).body, updates: (await updates()).body }
    await stop("primary")
    try {
      const b = await boards()
      expect(b.status).toBe(200)
      expect(b.body).toEqual(before.boards)
      const u = await updates()
      expect(u.status).toBe(200)
      expect(u.body).toEqual(before.updates)
      expect(ids(u)).toEqual(["u_first"])
      const s = await suggest("Dark mode")
      expect(s.status).toBe(200)
      expect(ids(s)).toEqual(["p_dark"])
      // A write needs the primary: the same 500 as without a replica, no SQL in it.
      const created = await feedback("Nowhere to write")
      expect(created.status).toBe(500)
      expect(created.body).toEqual({ _tag: "InternalServerError", message: expect.any(String) })
      expect(created.body.message).not.toMatch(/ECONNREFUSED|5434|select|insert/i)
      expect((await getJson(`${server.origin}/health`)).status).toBe(503)
      // The semantic half answered too (it logs when it fails and the answer falls back to lexical).
      expect(logLines("Semantic suggestions failed")).toEqual([])
      // The replica's gauges are read on the replica.
      const text = await scrape()
      expect(sample(text, "hearken_db_replica_up")).toBe(1)
      // It has nothing to stream from: the gauge that tells a replica falling behind with a lag of 0.
      await eventually("the replica not streaming", async () => sample(await scrape(), "hearken_db_replica_streaming") === 0 || undefined)
    } finally {
      await start("primary")
    }
    await eventually("the primary back", async () => (await feedback("Written again")).status === 200 || undefined)
  })
})

describe("replication lag", () => {
  it("a post created on the primary appears in suggestions once replicated; the lag is a metric until then", async () => {
    await pauseReplay()
    let id: string
    try {
      const created = await feedback("Offline synchronisation of drafts")
      expect(created.status).toBe(200)
      id = created.body.id as string
      // Not replayed yet: the replica does not have it.
      const lagging = await suggest("Offline synchronisation")
      expect(lagging.status).toBe(200)
      expect(ids(lagging)).not.toContain(id)
      const lag = await eventually("a lag on /metrics", async () => {
        const text = await scrape()
        const seconds = sample(text, "hearken_db_replica_lag_seconds") ?? 0
        const bytes = sample(text, "hearken_db_replica_lag_bytes") ?? 0
        return seconds > 0 && bytes > 0 ? { seconds, bytes } : undefined
      })
      expect(lag.bytes).toBeGreaterThan(0)
    } finally {
      await resumeReplay()
    }
    await eventually("the post in suggestions", async () => {
      const s = await suggest("Offline synchronisation")
      return s.status === 200 && ids(s).includes(id) || undefined
    })
    // Caught up, and the primary idle: 0, not the time since its last write.
    await eventually("the lag back to 0", async () => {
      const text = await scrape()
      return sample(text, "hearken_db_replica_lag_seconds") === 0 && sample(text, "hearken_db_replica_lag_bytes") === 0 || undefined
    })
  })

  it("a cached answer follows the replica's version: the lagging body is replaced once it catches up", async () => {
    await pauseReplay()
    let stale: { etag: string; body: ReadonlyArray<{ id: string }> }
    try {
      await db.query("primary", (sql) =>
        sql`INSERT INTO boards (id, organization_id, name, slug, visibility, created_at, updated_at)
            VALUES ('b_new', 'org_acme', 'New board', 'new-board', 'public', now(), now())`)
      const res = await boards()
      expect(res.status).toBe(200)
      expect(ids(res)).not.toContain("b_new")
      stale = { etag: res.headers.get("etag")!, body: res.body }
      // Asked again while lagging: the same tag and body (a version and body of one server).
      const again = await boards()
      expect(again.headers.get("etag")).toBe(stale.etag)
      expect(again.body).toEqual(stale.body)
    } finally {
      await resumeReplay()
    }
    const fresh = await eventually("the new board", async () => {
      const res = await boards()
      return ids(res).includes("b_new") ? res : undefined
    })
    expect(fresh.headers.get("etag")).not.toBe(stale.etag)
    const conditional = await getJson(`${api()}/boards?organizationId=org_acme`, { "if-none-match": stale.etag })
    expect(conditional.status).toBe(200)
    expect(ids(conditional)).toContain("b_new")
  })
})

describe("a replica that is down", () => {
  it("reads fall back to the primary with one log line, and go back to the replica when it answers again", async () => {
    const unavailable = "unavailable"
    expect(logLines(unavailable)).toEqual([])
    await stop("replica")
    let primaryReads: number
    try {
      const primaryBefore = await readsOn("primary")
      for (let i = 0; i < 5; i++) {
        expect((await boards()).status).toBe(200)
        expect((await updates()).status).toBe(200)
        const s = await suggest("Dark mode")
        expect(s.status).toBe(200)
        expect(ids(s)).toEqual(["p_dark"])
      }
      primaryReads = await readsOn("primary")
      expect(primaryReads).toBeGreaterThanOrEqual(primaryBefore + 15)
      // Once, however many reads fell back, with the reason.
      const lines = logLines(unavailable)
      expect(lines).toHaveLength(1)
      expect(lines[0]!.level).toBe("WARN")
      expect(lines[0]!.message).toMatch(/^Read replica 127\.0\.0\.1:5435 unavailable \(.+\): reads go to the primary until it answers again$/)
      expect(lines[0]!.message).not.toContain("postgres://")
      expect(sample(await scrape(), "hearken_db_replica_up")).toBe(0)
    } finally {
      await start("replica")
    }
    await eventually("reads on the replica again", async () => {
      const before = await readsOn("replica")
      expect((await boards()).status).toBe(200)
      return (await readsOn("replica")) > before || undefined
    })
    // One line each way, in order, however many reads there were. (Checked up to the return: a later
    // blip of the replica would rightly log its own pair.)
    expect(logLines("Read replica").slice(0, 2).map((l) => [l.level, l.message.replace(/ \(.*\)/, "")])).toEqual([
      ["WARN", "Read replica 127.0.0.1:5435 unavailable: reads go to the primary until it answers again"],
      ["INFO", "Read replica 127.0.0.1:5435 answers again: reads go to it"]
    ])
    await eventually("hearken_db_replica_up at 1", async () => sample(await scrape(), "hearken_db_replica_up") === 1 || undefined)
  })
})

/**
 * A replica that dies without closing its sockets, or whose connections are reset, fails the reads
 * on connections the pool already holds (not when one is opened): each such read runs again, whole,
 * on the primary. Between Hearken and the replica, a TCP proxy (test/support/tcp-proxy.ts) that a
 * test switches to a blackhole (nothing goes through, sockets stay open) or to resetting. The
 * statement timeout is 1 s here, so a read waits at most 2 s (the timeout and `deadlineMarginMs`)
 * for a replica that does not answer.
 */
describe("a replica that fails on connections already open (through a TCP proxy)", () => {
  const statementTimeoutMs = 1000
  const fallsBack = async (
    mode: Exclude<ProxyMode, "forward">,
    reason: RegExp,
    extra: Record<string, string> = {},
    through: "proxy" | "pgbouncer" = "proxy"
  ) => {
    const proxy = await startProxy({ host: "127.0.0.1", port: Number(replication.replicaPort) })
    // Hearken, then (with "pgbouncer") a PgBouncer of the test's own, then the proxy, then the replica.
    const pooler = through === "pgbouncer" ? await startPgBouncer(proxy.port).catch(async (error) => {
      await proxy.close()
      throw error
    }) : undefined
    const readPort = pooler?.port ?? proxy.port
    const port = await freePort()
    const readUrl = db.readUrl.replace(`127.0.0.1:${replication.replicaPort}/`, `127.0.0.1:${readPort}/`)
    expect(readUrl).not.toBe(db.readUrl)
    const proxied = await processes.start({
      DATABASE_READ_URL: readUrl,
      DATABASE_STATEMENT_TIMEOUT_MS: String(statementTimeoutMs),
      METRICS_PORT: String(port),
      ...extra
    }).catch(async (error) => {
      await pooler?.stop()
      await proxy.close()
      throw error
    })
    const on = `${proxied.origin}/api/widget/v1`
    const text = async () => {
      const res = await fetch(`http://127.0.0.1:${port}/metrics`)
      expect(res.status).toBe(200)
      return res.text()
    }
    const readsOnProxied = async (target: "replica" | "primary") => sample(await text(), "hearken_db_reads_total", `target="${target}"`) ?? 0
    const lines = (words: string) =>
      proxied.stdout().split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as { level: string; message: string })
        .filter((l) => typeof l.message === "string" && l.message.includes(words))
    /** `/boards`, `/updates` and suggestions (by meaning too): each 200, with its rows. */
    const allThree = async () => {
      const b = await getJson(`${on}/boards?organizationId=org_acme`)
      expect(b.status).toBe(200)
      expect(ids(b)).toContain("b_feat")
      const u = await getJson(`${on}/updates?organizationId=org_acme`)
      expect(u.status).toBe(200)
      expect(ids(u)).toEqual(["u_first"])
      const s = await widgetClient(proxied).suggest({ organizationId: "org_acme", boardId: "b_feat", title: "Dark mode", content: "" })
      expect(s.status).toBe(200)
      expect(ids(s)).toEqual(["p_dark"])
    }
    try {
      // Connections to the replica, open and idle in the pool: what a lost host leaves behind.
      const replicaBefore = await readsOnProxied("replica")
      for (let i = 0; i < 3; i++) await allThree()
      expect(await readsOnProxied("replica")).toBeGreaterThanOrEqual(replicaBefore + 9)
      expect(sample(await text(), "hearken_db_replica_up")).toBe(1)
      expect(lines("Read replica")).toEqual([])

      const primaryBefore = await readsOnProxied("primary")
      // The reads first: a scrape reads the replica's lag, which would find the failure before them.
      proxy.set(mode)
      for (let i = 0; i < 3; i++) await allThree()
      expect(await readsOnProxied("primary")).toBeGreaterThanOrEqual(primaryBefore + 9)
      const warned = lines("unavailable")
      expect(warned).toHaveLength(1)
      expect(warned[0]!.level).toBe("WARN")
      expect(warned[0]!.message).toMatch(new RegExp(`^Read replica 127\\.0\\.0\\.1:${readPort} unavailable \\(.+\\): reads go to the primary until it answers again$`))
      expect(warned[0]!.message).toMatch(reason)
      expect(sample(await text(), "hearken_db_replica_up")).toBe(0)
      // The suggestion's transaction ran again on the primary: its semantic half did not fail.
      expect(lines("Semantic suggestions failed")).toEqual([])

      proxy.set("forward")
      await eventually("reads on the replica again", async () => {
        const before = await readsOnProxied("replica")
        expect((await getJson(`${on}/boards?organizationId=org_acme`)).status).toBe(200)
        return (await readsOnProxied("replica")) > before || undefined
      }, { timeoutMs: 30_000 })
      expect(lines("Read replica").map((l) => [l.level, l.message.replace(/ \(.*\)/, "")])).toEqual([
        ["WARN", `Read replica 127.0.0.1:${readPort} unavailable: reads go to the primary until it answers again`],
        ["INFO", `Read replica 127.0.0.1:${readPort} answers again: reads go to it`]
      ])
      expect(sample(await text(), "hearken_db_replica_up")).toBe(1)
      await allThree()
    } finally {
      await processes.stop(proxied)
      await pooler?.stop()
      await proxy.close()
    }
  }

  it("blackholed (a lost host, a partition): a read waits for the deadline, then runs on the primary", () =>
    fallsBack("blackhole", new RegExp(`no answer within ${statementTimeoutMs + ReadReplica.deadlineMarginMs} ms`)), 90_000)

  it("its connections reset: the read that meets the reset runs again on the primary", () =>
    fallsBack("reset", /\(PgConnection: (Socket error|Connection closed)\)/), 90_000)

  it("blackholed with DATABASE_POOL_MODE=transaction (a pooler that accepted the login, then waits for a server)", () =>
    fallsBack("blackhole", new RegExp(`no answer within ${statementTimeoutMs + ReadReplica.deadlineMarginMs} ms`), {
      DATABASE_POOL_MODE: "transaction",
      DATABASE_DIRECT_URL: db.url
    }), 90_000)

  it("blackholed behind a real PgBouncer (transaction mode): it keeps the login, the read waits for the deadline, then runs on the primary", () =>
    fallsBack("blackhole", new RegExp(`no answer within ${statementTimeoutMs + ReadReplica.deadlineMarginMs} ms`), {
      DATABASE_POOL_MODE: "transaction",
      DATABASE_DIRECT_URL: db.url
    }, "pgbouncer"), 90_000)
})

describe("with DATABASE_POOL_MODE=transaction (as behind PgBouncer)", () => {
  it("reads on the replica through the pooled client, and served with the primary stopped", async () => {
    const port = await freePort()
    const pooled = await processes.start({ DATABASE_POOL_MODE: "transaction", DATABASE_DIRECT_URL: db.url, METRICS_PORT: String(port) })
    const on = `${pooled.origin}/api/widget/v1`
    const replicaReads = async () =>
      sample(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text(), "hearken_db_reads_total", `target="replica"`) ?? 0
    try {
      const before = await replicaReads()
      await stop("primary")
      try {
        expect((await getJson(`${on}/boards?organizationId=org_acme`)).status).toBe(200)
        expect(ids(await getJson(`${on}/updates?organizationId=org_acme`))).toEqual(["u_first"])
        const s = await widgetClient(pooled).suggest({ organizationId: "org_acme", boardId: "b_feat", title: "Dark mode", content: "" })
        expect(s.status).toBe(200)
        expect(ids(s)).toEqual(["p_dark"])
      } finally {
        await start("primary")
      }
      expect(await replicaReads()).toBeGreaterThanOrEqual(before + 3)
    } finally {
      await processes.stop(pooled)
    }
  }, 60_000)
})

/** The reads' client in this process, on the pair. */
const withReads = async <A>(f: (reads: ReadReplica.ReadSql["Service"]) => Effect.Effect<A, unknown>) => {
  const provider = ConfigProvider.fromEnv({ env: { DATABASE_URL: db.url, DATABASE_READ_URL: db.readUrl, LOG_LEVEL: "none" } })
  const layer = ReadReplica.layer.pipe(
    Layer.provideMerge(Database.layer),
    Layer.provide(ServerConfig.layer),
    Layer.provide(ConfigProvider.layer(provider))
  )
  const scope = Effect.runSync(Scope.make())
  try {
    const context = await Effect.runPromise(Layer.buildWithScope(layer, scope))
    return await Effect.runPromise(ReadReplica.ReadSql.use(f).pipe(Effect.provide(context)))
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}
const standby = (reads: ReadReplica.ReadSql["Service"]) =>
  Effect.map(reads.client<{ standby: boolean }>`SELECT pg_is_in_recovery() AS standby`, ([row]) => row!.standby)
const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

describe("one server per answer (ReadSql.oneServer)", () => {
  it("a run begun on the primary stays there when the replica answers again; a run begun on the replica moves to the primary when it fails", async () => {
    const seen = await withReads((reads) =>
      Effect.gen(function*() {
        const fromPrimary = yield* reads.oneServer
        const fromReplica = yield* reads.oneServer
        const first = yield* fromReplica(standby(reads))
        yield* promise(() => stop("replica"))
        const began = yield* fromPrimary(standby(reads))
        const moved = yield* fromReplica(standby(reads))
        yield* promise(() => start("replica"))
        // Unpinned reads go back to the replica once it answers (the probe runs every second).
        yield* promise(() => eventually("reads on the replica", () => Effect.runPromise(standby(reads)).then((s) => s || undefined)))
        const stayed = yield* fromPrimary(standby(reads))
        const stayedMoved = yield* fromReplica(standby(reads))
        const fresh = yield* (yield* reads.oneServer)(standby(reads))
        return { first, began, moved, stayed, stayedMoved, fresh }
      })
    )
    expect(seen).toEqual({ first: true, began: false, moved: false, stayed: false, stayedMoved: false, fresh: true })
  }, 60_000)
})

describe("what a read's failure on the replica means (ReadSql's client, in this process)", () => {
  it("a read's own statement timeout (57014) and a statement's own error stay its own: not run again, the replica still up", async () => {
    const seen = await withReads((reads) =>
      Effect.gen(function*() {
        const timedOut = yield* reads.client.withTransaction(
          Effect.andThen(reads.client`SELECT set_config('statement_timeout', '50', true)`, reads.client`SELECT pg_sleep(2)`)
        ).pipe(Effect.flip)
        const bad = yield* reads.client`SELECT * FROM no_such_table`.pipe(Effect.flip)
        const up = yield* Option.getOrThrow(reads.replica).up
        return { timedOut: timedOut.reason._tag, bad: bad.reason._tag, up }
      })
    )
    expect(seen).toEqual({ timedOut: "StatementTimeoutError", bad: "SqlSyntaxError", up: true })
  }, 30_000)

  it("a recovery conflict (40001) runs the read again on the primary, and the replica stays up for the others", async () => {
    await db.query("primary", (sql) =>
      sql`CREATE OR REPLACE FUNCTION hearken_test_conflict_on_standby() RETURNS boolean LANGUAGE plpgsql AS $$
        BEGIN
          IF pg_is_in_recovery() THEN
            RAISE EXCEPTION 'canceling statement due to conflict with recovery' USING ERRCODE = '40001';
          END IF;
          RETURN true;
        END $$`)
    await eventually("the function on the replica", async () => {
      const [row] = await db.query<{ there: boolean }>("replica", (sql) =>
        sql`SELECT to_regproc('hearken_test_conflict_on_standby') IS NOT NULL AS there`)
      return row!.there || undefined
    })
    const seen = await withReads((reads) =>
      Effect.gen(function*() {
        // As a hot standby cancels a query whose rows replay must remove: the same SQLSTATE, on the standby only.
        const [row] = yield* reads.client<{ standby: boolean }>`SELECT pg_is_in_recovery() AS standby FROM (SELECT 1) AS one
          WHERE hearken_test_conflict_on_standby()`
        const up = yield* Option.getOrThrow(reads.replica).up
        const next = yield* standby(reads)
        return { standby: row!.standby, up, next }
      })
    )
    expect(seen).toEqual({ standby: false, up: true, next: true })
  }, 30_000)

  it("a statement the replica ends (pg_terminate_backend: 57P01, as a shutdown) runs again on the primary", async () => {
    const seen = await withReads((reads) =>
      Effect.gen(function*() {
        const read = yield* Effect.forkChild(
          reads.client<{ standby: boolean }>`SELECT pg_is_in_recovery() AS standby, pg_sleep(1) IS NULL AS terminated_here`
        )
        yield* promise(() =>
          eventually("the read ended on the replica", async () => {
            const [row] = await db.query<{ n: number }>("replica", (sql) =>
              sql`SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
                  WHERE query LIKE '%terminated_here%' AND pid <> pg_backend_pid()`)
            return row!.n > 0 || undefined
          })
        )
        const [row] = yield* Fiber.join(read)
        return { standby: row!.standby }
      })
    )
    expect(seen).toEqual({ standby: false })
  }, 30_000)
})

// Last: it rewrites the replica's primary_conninfo, and the replica needs a moment to stream again.
describe("a replica that stops receiving", () => {
  it("a replica that stops receiving shows in hearken_db_replica_streaming, not in its lag, and streams again once told where from", async () => {
    const [setting] = await db.query<{ conninfo: string }>("replica", (sql) => sql`SELECT current_setting('primary_conninfo') AS conninfo`)
    const conninfo = setting!.conninfo
    expect(conninfo).toMatch(/port=5434/)
    expect(sample(await scrape(), "hearken_db_replica_streaming")).toBe(1)
    try {
      await db.query("replica", (sql) => sql`ALTER SYSTEM SET primary_conninfo = ''`)
      await db.query("replica", (sql) => sql`SELECT pg_reload_conf()`)
      await eventually("the replica not streaming", async () => sample(await scrape(), "hearken_db_replica_streaming") === 0 || undefined)
      // A write it does not receive: its own lag still reads 0, all it received being replayed.
      expect((await feedback("Written while the replica does not listen")).status).toBe(200)
      const text = await scrape()
      expect(sample(text, "hearken_db_replica_lag_bytes")).toBe(0)
      expect(sample(text, "hearken_db_replica_up")).toBe(1)
    } finally {
      await db.query("replica", (sql) => sql.unsafe(`ALTER SYSTEM SET primary_conninfo = '${conninfo.replaceAll("'", "''")}'`))
      await db.query("replica", (sql) => sql`SELECT pg_reload_conf()`)
    }
    await eventually("the replica streaming again", async () => sample(await scrape(), "hearken_db_replica_streaming") === 1 || undefined, {
      timeoutMs: 30_000
    })
  })
})
