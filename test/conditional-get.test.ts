import { assert, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { PublicUpdates } from "../packages/server/src/updates/PublicUpdates.js"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { mkdtemp, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { withClient } from "./support/database.js"
import { baseFixture } from "./support/fixtures.js"
import { get, inMemoryServer, query, TestDb, Widget } from "./support/inMemory.js"
import { seedScript, spawnScript } from "./support/process.js"

/**
 * Conditional GETs on /boards and /updates (decision 0010):
 * ETag and Cache-Control on 200, 304 for a matching If-None-Match without
 * reading the tables behind the answer, a tag that changes with every write
 * by any process and when a scheduled entry comes due, scoped by organization.
 * In memory (`support/inMemory.ts`); `npm run seed` runs as a process on the same database.
 */
const fixture = baseFixture()
fixture.organizations[0]!.updates = [
  { id: "u_one", title: "One", slug: "one", content: "<p>One</p>", publishedAt: "2026-01-01T00:00:00.000Z" }
]

const boards = (org = "org_acme") => `boards?organizationId=${org}`
const updates = (org = "org_acme") => `updates?organizationId=${org}`
const tagOf = (path: string) => Effect.map(get(path), (res) => res.headers.get("etag")!)

layer(inMemoryServer(fixture), { excludeTestServices: true })("conditional GETs", (it) => {
  it.effect("answer 200 with a strong ETag and a short public max-age, and the same body as before", () =>
    Effect.gen(function*() {
      for (const path of [boards(), updates()]) {
        const res = yield* get(path)
        expect(res.status).toBe(200)
        expect(res.headers.get("etag")).toMatch(/^"[A-Za-z0-9_-]{27}"$/)
        expect(res.headers.get("cache-control")).toBe("public, max-age=10")
        expect(res.headers.get("content-type")).toBe("application/json")
      }
      const list = (yield* get(boards())).body
      expect(list.map((b: { id: string }) => b.id)).toEqual(["b_bugs", "b_feat", "b_same_time_a", "b_same_time_b"])
      expect(list[1]).toEqual({
        id: "b_feat", name: "Feature requests", slug: "feature-requests", organizationId: "org_acme",
        createdAt: "2026-01-02T00:00:00.000Z", updatedAt: "2026-01-03T00:00:00.000Z"
      })
    }))

  it.effect("answer 304 with no body to a matching If-None-Match: one tag, a list, a weak tag, or *", () =>
    Effect.gen(function*() {
      for (const path of [boards(), updates()]) {
        const tag = yield* tagOf(path)
        for (const ifNoneMatch of [tag, `"nope", ${tag}`, `W/${tag}`, "*"]) {
          const res = yield* get(path, { "if-none-match": ifNoneMatch })
          expect(res.status).toBe(304)
          expect(res.text).toBe("")
          expect(res.headers.get("etag")).toBe(tag)
          expect(res.headers.get("cache-control")).toBe("public, max-age=10")
        }
        expect((yield* get(path, { "if-none-match": "\"something-else\"" })).status).toBe(200)
      }
    }))

  it.effect("answer 304 without reading the boards or updates tables", () =>
    Effect.gen(function*() {
      const tags = [yield* tagOf(boards()), yield* tagOf(updates())]
      const db = yield* TestDb
      const client = yield* Effect.context<Widget>()
      // Another connection holds both tables: any read of them would wait.
      yield* Effect.promise(() =>
        withClient(db.url, (sql) =>
          sql.withTransaction(Effect.gen(function*() {
            yield* sql`LOCK TABLE boards, updates IN ACCESS EXCLUSIVE MODE`
            const answers = yield* Effect.all(
              [get(boards(), { "if-none-match": tags[0]! }), get(updates(), { "if-none-match": tags[1]! })],
              { concurrency: "unbounded" }
            ).pipe(Effect.provide(client), Effect.timeout("5 seconds"))
            expect(answers.map((r) => r.status)).toEqual([304, 304])
          }))))
    }))

  it.effect("scope tags by organization: two organizations with no boards get different tags", () =>
    Effect.gen(function*() {
      const [a, b] = [yield* tagOf(boards("org_unknown_a")), yield* tagOf(boards("org_unknown_b"))]
      expect(a).not.toBe(b)
      expect(yield* tagOf(boards("org_acme"))).not.toBe(yield* tagOf(boards("org_other")))
    }))

  it.effect("change the tag when another process writes, and send the new answer to the old tag", () =>
    Effect.gen(function*() {
      const old = yield* tagOf(boards())
      yield* query((sql) => sql`UPDATE boards SET name = 'Ideas' WHERE id = 'b_feat'`)
      const res = yield* get(boards(), { "if-none-match": old })
      expect(res.status).toBe(200)
      expect(res.headers.get("etag")).not.toBe(old)
      expect(res.body.find((b: { id: string }) => b.id === "b_feat").name).toBe("Ideas")
      // The updates' tag did not move: nothing in that answer changed.
      const updatesTag = yield* tagOf(updates())
      yield* query((sql) => sql`UPDATE boards SET name = 'Feature requests' WHERE id = 'b_feat'`)
      expect(yield* tagOf(updates())).toBe(updatesTag)
    }))

  it.effect("change the tag when npm run seed changes the changelog, and not when it writes the same values again", () =>
    Effect.gen(function*() {
      const db = yield* TestDb
      const dir = yield* Effect.promise(() => mkdtemp(join(tmpdir(), "hearken-etag-")))
      const seed = (title: string) => Effect.promise(async () => {
        const changed = baseFixture()
        changed.organizations[0]!.updates = [{ ...fixture.organizations[0]!.updates![0]!, title }]
        await writeFile(join(dir, "fixture.json"), JSON.stringify(changed))
        const run = spawnScript(seedScript, [join(dir, "fixture.json")], { DATABASE_URL: db.url, LOG_LEVEL: "error" })
        expect(await run.exited).toBe(0)
      })
      const before = yield* tagOf(updates())
      yield* seed("One")
      expect(yield* tagOf(updates())).toBe(before)
      yield* seed("One, renamed")
      const after = yield* get(updates(), { "if-none-match": before })
      expect(after.status).toBe(200)
      expect(after.body[0].title).toBe("One, renamed")
    }))
})

/** The published limits (`RATE_LIMIT_MULTIPLIER=1`), and the TestClock where time is the subject. */
layer(inMemoryServer(baseFixture(), { RATE_LIMIT_MULTIPLIER: "1" }), { excludeTestServices: true })("on the TestClock", (it) => {
  it.effect("a 304 counts against the rate limit: the first request and 119 revalidations, then 429; one more every 500 ms", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-05-01T00:00:00.000Z"))
      const first = yield* get(boards())
      expect(first.status).toBe(200)
      const tag = first.headers.get("etag")!
      const statuses: Array<number> = []
      while (statuses.length < 200 && statuses.at(-1) !== 429) {
        statuses.push((yield* get(boards(), { "if-none-match": tag })).status)
      }
      // 120 a minute: the first request and 119 revalidations, then the limit; the clock stands still, so nothing refills.
      expect(statuses.at(-1)).toBe(429)
      const revalidations = statuses.length - 1
      expect(statuses.slice(0, revalidations).every((s) => s === 304)).toBe(true)
      expect(revalidations).toBe(119)
      // The bucket refills one request every 500 ms.
      yield* TestClock.adjust(499)
      expect((yield* get(boards(), { "if-none-match": tag })).status).toBe(429)
      yield* TestClock.adjust(1)
      expect((yield* get(boards(), { "if-none-match": tag })).status).toBe(304)
      expect((yield* get(boards(), { "if-none-match": tag })).status).toBe(429)
    }).pipe(Effect.provide(TestClock.layer())))

  it.effect("a scheduled changelog entry appears when it comes due, with a new tag, although nothing was written", () =>
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
