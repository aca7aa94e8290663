import { assert, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { mkdtemp, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { Core } from "../packages/server/dist/App.js"
import * as ServerConfig from "../packages/server/dist/config/ServerConfig.js"
import { PublicUpdates } from "../packages/server/dist/updates/PublicUpdates.js"
import { createDatabase, withClient } from "./support/database.js"
import { baseFixture } from "./support/fixtures.js"
import { seedScript, spawnScript } from "./support/process.js"
import { startSeededServer, useServer } from "./support/server.js"

/**
 * Conditional GETs on /boards and /updates (decision 0010):
 * ETag and Cache-Control on 200, 304 for a matching If-None-Match without
 * reading the tables behind the answer, a tag that changes with every write
 * by any process and when a scheduled entry comes due, scoped by organization.
 */
const fixture = baseFixture()
fixture.organizations[0]!.updates = [
  { id: "u_one", title: "One", slug: "one", content: "<p>One</p>", publishedAt: "2026-01-01T00:00:00.000Z" }
]
const server = useServer(() => startSeededServer(fixture))

const get = (path: string, headers: Record<string, string> = {}) => fetch(`${server.api}${path}`, { headers })
const boards = (org = "org_acme") => `/boards?organizationId=${org}`
const updates = (org = "org_acme") => `/updates?organizationId=${org}`
const tagOf = async (path: string) => (await get(path)).headers.get("etag")!

describe("conditional GETs", () => {
  it("answer 200 with a strong ETag and a short public max-age, and the same body as before", async () => {
    for (const path of [boards(), updates()]) {
      const res = await get(path)
      expect(res.status).toBe(200)
      expect(res.headers.get("etag")).toMatch(/^"[A-Za-z0-9_-]{27}"$/)
      expect(res.headers.get("cache-control")).toBe("public, max-age=10")
      expect(res.headers.get("content-type")).toBe("application/json")
    }
    const list = await (await get(boards())).json()
    expect(list.map((b: { id: string }) => b.id)).toEqual(["b_bugs", "b_feat", "b_same_time_a", "b_same_time_b"])
    expect(list[1]).toEqual({
      id: "b_feat", name: "Feature requests", slug: "feature-requests", organizationId: "org_acme",
      createdAt: "2026-01-02T00:00:00.000Z", updatedAt: "2026-01-03T00:00:00.000Z"
    })
  })

  it("answer 304 with no body to a matching If-None-Match: one tag, a list, a weak tag, or *", async () => {
    for (const path of [boards(), updates()]) {
      const tag = await tagOf(path)
      for (const ifNoneMatch of [tag, `"nope", ${tag}`, `W/${tag}`, "*"]) {
        const res = await get(path, { "if-none-match": ifNoneMatch })
        expect(res.status).toBe(304)
        expect(await res.text()).toBe("")
        expect(res.headers.get("etag")).toBe(tag)
        expect(res.headers.get("cache-control")).toBe("public, max-age=10")
      }
      expect((await get(path, { "if-none-match": "\"something-else\"" })).status).toBe(200)
    }
  })

  it("count a 304 against the rate limit", async () => {
    const limited = await startSeededServer(fixture, { RATE_LIMIT_MULTIPLIER: "1" })
    try {
      const url = `${limited.api}${boards()}`
      const first = await fetch(url)
      const tag = first.headers.get("etag")!
      const started = performance.now()
      const statuses: Array<number> = []
      while (statuses.length < 200 && statuses.at(-1) !== 429) {
        statuses.push((await fetch(url, { headers: { "if-none-match": tag } })).status)
      }
      // 120 a minute: the first request and 119 revalidations, then the limit. The bucket refills one
      // request every 500 ms, so a slow machine may fit a few more in before the first 429.
      const refills = Math.floor((performance.now() - started) / 500) + 1
      expect(statuses.at(-1)).toBe(429)
      const revalidations = statuses.length - 1
      expect(statuses.slice(0, revalidations).every((s) => s === 304)).toBe(true)
      expect(revalidations).toBeGreaterThanOrEqual(119)
      expect(revalidations).toBeLessThanOrEqual(119 + refills)
    } finally {
      await limited.close()
    }
  })

  it("answer 304 without reading the boards or updates tables", async () => {
    const tags = [await tagOf(boards()), await tagOf(updates())]
    // Another connection holds both tables: any read of them would wait.
    await withClient(server.db.url, (sql) =>
      sql.withTransaction(Effect.gen(function*() {
        yield* sql`LOCK TABLE boards, updates IN ACCESS EXCLUSIVE MODE`
        const answers = yield* Effect.promise(() =>
          Promise.all([get(boards(), { "if-none-match": tags[0]! }), get(updates(), { "if-none-match": tags[1]! })])
        ).pipe(Effect.timeout("5 seconds"))
        expect(answers.map((r) => r.status)).toEqual([304, 304])
      })))
  })

  it("scope tags by organization: two organizations with no boards get different tags", async () => {
    const [a, b] = [await tagOf(boards("org_unknown_a")), await tagOf(boards("org_unknown_b"))]
    expect(a).not.toBe(b)
    expect(await tagOf(boards("org_acme"))).not.toBe(await tagOf(boards("org_other")))
  })

  it("change the tag when another process writes, and send the new answer to the old tag", async () => {
    const old = await tagOf(boards())
    await server.db.query((sql) => sql`UPDATE boards SET name = 'Ideas' WHERE id = 'b_feat'`)
    const res = await get(boards(), { "if-none-match": old })
    expect(res.status).toBe(200)
    expect(res.headers.get("etag")).not.toBe(old)
    expect((await res.json()).find((b: { id: string }) => b.id === "b_feat").name).toBe("Ideas")
    // The updates' tag did not move: nothing in that answer changed.
    const updatesTag = await tagOf(updates())
    await server.db.query((sql) => sql`UPDATE boards SET name = 'Feature requests' WHERE id = 'b_feat'`)
    expect(await tagOf(updates())).toBe(updatesTag)
  })

  it("change the tag when npm run seed changes the changelog, and not when it writes the same values again", async () => {
    const dir = await mkdtemp(join(tmpdir(), "hearken-etag-"))
    const seed = async (title: string) => {
      const changed = baseFixture()
      changed.organizations[0]!.updates = [{ ...fixture.organizations[0]!.updates![0]!, title }]
      await writeFile(join(dir, "fixture.json"), JSON.stringify(changed))
      const run = spawnScript(seedScript, [join(dir, "fixture.json")], { DATABASE_URL: server.db.url, LOG_LEVEL: "error" })
      expect(await run.exited).toBe(0)
    }
    const before = await tagOf(updates())
    await seed("One")
    expect(await tagOf(updates())).toBe(before)
    await seed("One, renamed")
    const after = await get(updates(), { "if-none-match": before })
    expect(after.status).toBe(200)
    expect((await after.json())[0].title).toBe("One, renamed")
  })
})

/** On virtual time: the Core services on a fresh database, and the clock the answers read. */
const Env = Layer.unwrap(Effect.gen(function*() {
  const db = yield* Effect.acquireRelease(Effect.promise(createDatabase), (db) => Effect.promise(db.drop))
  const dir = yield* Effect.promise(() => mkdtemp(join(tmpdir(), "hearken-schedule-")))
  yield* Effect.promise(() => writeFile(join(dir, "fixture.json"), JSON.stringify(baseFixture())))
  const env = { DATABASE_URL: db.url, SEED_FILE: join(dir, "fixture.json"), LOG_LEVEL: "none" }
  return Core.pipe(Layer.provideMerge(ServerConfig.layer), Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env }))))
}))

layer(Env, { timeout: 60_000, excludeTestServices: true })("a scheduled changelog entry", (it) => {
  it.effect("appears when it comes due, with a new tag, although nothing was written", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const answers = yield* PublicUpdates
      const t0 = Date.now()
      yield* TestClock.setTime(t0)
      const due = new Date(t0 + 60_000).toISOString()
      yield* sql`INSERT INTO updates (id, organization_id, title, slug, content, excerpt, published_at)
        VALUES ('u_later', 'org_acme', 'Later', 'later', '<p>Soon</p>', 'Soon', ${due}::timestamptz)`
      const read = Effect.gen(function*() {
        const res = yield* answers.answer("org_acme", undefined)
        const body = JSON.parse(new TextDecoder().decode((res.body as { readonly body: Uint8Array }).body))
        return { tag: res.headers["etag"]!, ids: body.map((u: { id: string }) => u.id) }
      })
      const before = yield* read
      assert.deepStrictEqual(before.ids, [])
      yield* TestClock.adjust(59_999)
      assert.deepStrictEqual(yield* read, before)
      yield* TestClock.adjust(1)
      const after = yield* read
      assert.deepStrictEqual(after.ids, ["u_later"])
      assert.notStrictEqual(after.tag, before.tag)
      assert.strictEqual((yield* answers.answer("org_acme", before.tag)).status, 200)
      assert.strictEqual((yield* answers.answer("org_acme", after.tag)).status, 304)
    }).pipe(Effect.provide(TestClock.layer())))
})
