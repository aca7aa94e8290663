import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { postsTitled as postsTitledIn } from "./support/database.js"
import { baseFixture } from "./support/fixtures.js"
import { DocsRoutes, inMemoryServer, post, query, TestDb } from "./support/inMemory.js"
import { endpoint } from "./support/receiver.js"

// A subscribed endpoint, so that every created post enqueues one event; the worker is off, so the rows stay to be counted.
const fixture = baseFixture()
;(fixture.organizations[0] as Record<string, unknown>)["webhooks"] = [endpoint("wh_idem", "http://127.0.0.1:9/hook")]
const server = inMemoryServer(fixture, { WEBHOOK_WORKER: "false", TRUST_PROXY: "1" })

const body = (title: string, extra: Record<string, unknown> = {}) =>
  ({ organizationId: "org_acme", boardId: "b_feat", title, content: "<p>Please</p>", metadata: { a: "1", b: "2" }, ...extra })

const send = (payload: unknown, key: string | undefined, from = "203.0.113.1") =>
  post("feedback", payload, { "x-forwarded-for": from, ...(key === undefined ? {} : { "idempotency-key": key }) })

const postsTitled = (title: string) => Effect.flatMap(TestDb, (db) => Effect.promise(() => postsTitledIn(db, title)))

const eventsFor = (postId: string) =>
  query<{ n: number }>((sql) =>
    sql`SELECT count(*)::int AS n FROM webhook_events WHERE body::jsonb -> 'data' ->> 'id' = ${postId}`).pipe(Effect.map((rows) => rows[0]!.n))

layer(server, { excludeTestServices: true })("Idempotency-Key on POST /feedback", (it) => {
  it.effect("answers a retry with the first response, from any address, and creates nothing more", () =>
    Effect.gen(function*() {
      const first = yield* send(body("Retried"), "key-retry-1")
      expect(first.status).toBe(200)
      const again = yield* send(body("Retried"), "key-retry-1", "198.51.100.7")
      expect(again.status).toBe(200)
      expect(again.body).toEqual(first.body)
      // The same request, written differently: other key order, whitespace, an unknown field.
      const reordered = `{ "metadata": {"b":"2","a":"1"}, "content": "<p>Please</p>", "title": "Retried",
        "boardId": "b_feat", "organizationId": "org_acme", "ignored": true }`
      const third = yield* send(reordered, "key-retry-1")
      expect(third.body).toEqual(first.body)
      expect(yield* postsTitled("Retried")).toEqual([first.body.id])
      expect(yield* eventsFor(first.body.id)).toBe(1)
    }))

  it.effect("refuses the same key with another body with 400 naming Idempotency-Key, and creates nothing", () =>
    Effect.gen(function*() {
      const first = yield* send(body("Original"), "key-other-body")
      expect(first.status).toBe(200)
      for (const changed of [body("Changed"), body("Original", { content: "<p>Other</p>" }), body("Original", { metadata: { a: "1" } })]) {
        const res = yield* send(changed, "key-other-body")
        expect(res.status).toBe(400)
        expect(res.body).toEqual({ _tag: "DataValidationError", message: "Idempotency-Key: already used with a different request body" })
      }
      expect(yield* postsTitled("Changed")).toEqual([])
      expect(yield* postsTitled("Original")).toEqual([first.body.id])
    }))

  it.effect("makes 20 concurrent requests with one key one post and one event; each gets the first response", () =>
    Effect.gen(function*() {
      const results = yield* Effect.all(Array.from({ length: 20 }, (_, i) => send(body("Concurrent key"), "key-concurrent", `203.0.113.${i + 10}`)), { concurrency: "unbounded" })
      expect(results.map((r) => r.status)).toEqual(Array(20).fill(200))
      const ids = new Set(results.map((r) => r.body.id))
      expect(ids.size).toBe(1)
      for (const r of results) expect(r.body).toEqual(results[0]!.body)
      expect(yield* postsTitled("Concurrent key")).toEqual([...ids])
      expect(yield* eventsFor([...ids][0]!)).toBe(1)
    }))

  it.effect("leaves the key free after a failed request (404, 400, 401)", () =>
    Effect.gen(function*() {
      expect((yield* send(body("Free again", { boardId: "b_missing" }), "key-free")).status).toBe(404)
      expect((yield* send(body("Free again", { boardId: "b_private" }), "key-free")).status).toBe(400)
      expect((yield* send(body("Free again", { token: "not.a.token" }), "key-free")).status).toBe(401)
      const created = yield* send(body("Free again"), "key-free")
      expect(created.status).toBe(200)
      expect(yield* postsTitled("Free again")).toEqual([created.body.id])
    }))

  it.effect("scopes keys by organization", () =>
    Effect.gen(function*() {
      const acme = yield* send(body("Scoped"), "key-shared")
      const other = yield* send(body("Scoped", { organizationId: "org_other", boardId: "b_other" }), "key-shared")
      expect(acme.status).toBe(200)
      expect(other.status).toBe(200)
      expect(other.body.id).not.toBe(acme.body.id)
      expect(other.body.organizationId).toBe("org_other")
    }))

  it.effect("forgets a key after 24 hours (on the TestClock)", () =>
    Effect.gen(function*() {
      // A client of its own: the other tests' rate-limit buckets are on the real clock.
      const expiring = (key: string) => send(body("Expiring"), key, "192.0.2.24")
      yield* TestClock.setTime(Date.parse("2026-05-01T00:00:00.000Z"))
      const first = yield* expiring("key-expiring")
      expect(first.status).toBe(200)
      // Still remembered a millisecond before the 24 hours are up…
      yield* TestClock.adjust(24 * 3_600_000 - 1)
      expect((yield* expiring("key-expiring")).body).toEqual(first.body)
      // …and forgotten when they are.
      yield* TestClock.adjust(1)
      const later = yield* expiring("key-expiring")
      expect(later.status).toBe(200)
      expect(later.body.id).not.toBe(first.body.id)
      const replay = yield* expiring("key-expiring")
      expect(replay.body).toEqual(later.body)
    }).pipe(Effect.provide(TestClock.layer())))

  it.effect("creates a post per request without a key", () =>
    Effect.gen(function*() {
      const a = yield* send(body("No key"), undefined)
      const b = yield* send(body("No key"), undefined)
      expect(a.body.id).not.toBe(b.body.id)
      expect((yield* postsTitled("No key")).length).toBe(2)
    }))

  describe("refuses a bad key with 400 naming Idempotency-Key", () => {
    it.effect.each([
      ["empty", ""],
      ["256 characters", "k".repeat(256)],
      ["a space", "two words"],
      ["non-ASCII", "clé"],
      ["a tab", "a\tb"]
    ] as const)("refuses a key that is %s", ([_, key]) =>
      Effect.gen(function*() {
        const res = yield* post("feedback", body("Bad key"), { "idempotency-key": key })
        expect(res.status).toBe(400)
        expect(res.body._tag).toBe("DataValidationError")
        expect(res.body.message).toMatch(/^Idempotency-Key: /)
        expect(yield* postsTitled("Bad key")).toEqual([])
      }))
  })

  it.effect("accepts a key of 255 visible ASCII characters", () =>
    Effect.gen(function*() {
      const key = Array.from({ length: 255 }, (_, i) => String.fromCharCode(0x21 + (i % 94))).join("")
      expect((yield* send(body("Long key"), key)).status).toBe(200)
      expect((yield* send(body("Long key"), key)).status).toBe(200)
      expect((yield* postsTitled("Long key")).length).toBe(1)
    }))

  it.effect("is documented as a header parameter of POST /feedback", () =>
    Effect.gen(function*() {
      const docs = yield* DocsRoutes
      const response = yield* docs.fetch(new Request("http://localhost/docs/openapi.json"))
      const spec = yield* Effect.promise(() => response.json())
      const parameters = spec.paths["/api/widget/v1/feedback"].post.parameters
      const header = parameters.find((p: { name: string }) => p.name.toLowerCase() === "idempotency-key")
      expect(header).toMatchObject({ in: "header", required: false })
      expect(header.schema).toMatchObject({ type: "string" })
    }))
})
