import { describe, expect, it } from "vitest"
import { baseFixture } from "./support/fixtures.js"
import { endpoint } from "./support/receiver.js"
import { getJson, postJson, startSeededServer, useServer } from "./support/server.js"

// A subscribed endpoint, so that every created post enqueues one event; the worker is off, so the rows stay to be counted.
const fixture = baseFixture()
;(fixture.organizations[0] as Record<string, unknown>)["webhooks"] = [endpoint("wh_idem", "http://127.0.0.1:9/hook")]
const server = useServer(() => startSeededServer(fixture, { WEBHOOK_WORKER: "false", TRUST_PROXY: "1" }))

const body = (title: string, extra: Record<string, unknown> = {}) =>
  ({ organizationId: "org_acme", boardId: "b_feat", title, content: "<p>Please</p>", metadata: { a: "1", b: "2" }, ...extra })

const send = (payload: unknown, key: string | undefined, from = "203.0.113.1") =>
  postJson(`${server.api}/feedback`, payload, { "x-forwarded-for": from, ...(key === undefined ? {} : { "idempotency-key": key }) })

const postsTitled = async (title: string) =>
  (await server.db.query<{ id: string }>((sql) => sql`SELECT id FROM posts WHERE title = ${title} ORDER BY id`)).map((r) => r.id)

const eventsFor = async (postId: string) =>
  (await server.db.query<{ n: number }>((sql) =>
    sql`SELECT count(*)::int AS n FROM webhook_events WHERE body::jsonb -> 'data' ->> 'id' = ${postId}`))[0]!.n

describe("Idempotency-Key on POST /feedback", () => {
  it("answers a retry with the first response, from any address, and creates nothing more", async () => {
    const first = await send(body("Retried"), "key-retry-1")
    expect(first.status).toBe(200)
    const again = await send(body("Retried"), "key-retry-1", "198.51.100.7")
    expect(again.status).toBe(200)
    expect(again.body).toEqual(first.body)
    // The same request, written differently: other key order, whitespace, an unknown field.
    const reordered = `{ "metadata": {"b":"2","a":"1"}, "content": "<p>Please</p>", "title": "Retried",
      "boardId": "b_feat", "organizationId": "org_acme", "ignored": true }`
    const third = await send(reordered, "key-retry-1")
    expect(third.body).toEqual(first.body)
    expect(await postsTitled("Retried")).toEqual([first.body.id])
    expect(await eventsFor(first.body.id)).toBe(1)
  })

  it("refuses the same key with another body with 400 naming Idempotency-Key, and creates nothing", async () => {
    const first = await send(body("Original"), "key-other-body")
    expect(first.status).toBe(200)
    for (const changed of [body("Changed"), body("Original", { content: "<p>Other</p>" }), body("Original", { metadata: { a: "1" } })]) {
      const res = await send(changed, "key-other-body")
      expect(res.status).toBe(400)
      expect(res.body).toEqual({ _tag: "DataValidationError", message: "Idempotency-Key: already used with a different request body" })
    }
    expect(await postsTitled("Changed")).toEqual([])
    expect(await postsTitled("Original")).toEqual([first.body.id])
  })

  it("makes 20 concurrent requests with one key one post and one event; each gets the first response", async () => {
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => send(body("Concurrent key"), "key-concurrent", `203.0.113.${i + 10}`)))
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200))
    const ids = new Set(results.map((r) => r.body.id))
    expect(ids.size).toBe(1)
    for (const r of results) expect(r.body).toEqual(results[0]!.body)
    expect(await postsTitled("Concurrent key")).toEqual([...ids])
    expect(await eventsFor([...ids][0]!)).toBe(1)
  })

  it("leaves the key free after a failed request (404, 400, 401)", async () => {
    expect((await send(body("Free again", { boardId: "b_missing" }), "key-free")).status).toBe(404)
    expect((await send(body("Free again", { boardId: "b_private" }), "key-free")).status).toBe(400)
    expect((await send(body("Free again", { token: "not.a.token" }), "key-free")).status).toBe(401)
    const created = await send(body("Free again"), "key-free")
    expect(created.status).toBe(200)
    expect(await postsTitled("Free again")).toEqual([created.body.id])
  })

  it("scopes keys by organization", async () => {
    const acme = await send(body("Scoped"), "key-shared")
    const other = await send(body("Scoped", { organizationId: "org_other", boardId: "b_other" }), "key-shared")
    expect(acme.status).toBe(200)
    expect(other.status).toBe(200)
    expect(other.body.id).not.toBe(acme.body.id)
    expect(other.body.organizationId).toBe("org_other")
  })

  it("forgets a key after 24 hours", async () => {
    const first = await send(body("Expiring"), "key-expiring")
    await server.db.query((sql) =>
      sql`UPDATE idempotency_keys SET created_at = now() - interval '24 hours 1 minute' WHERE key = 'key-expiring'`)
    const later = await send(body("Expiring"), "key-expiring")
    expect(later.status).toBe(200)
    expect(later.body.id).not.toBe(first.body.id)
    const replay = await send(body("Expiring"), "key-expiring")
    expect(replay.body).toEqual(later.body)
  })

  it("creates a post per request without a key", async () => {
    const a = await send(body("No key"), undefined)
    const b = await send(body("No key"), undefined)
    expect(a.body.id).not.toBe(b.body.id)
    expect((await postsTitled("No key")).length).toBe(2)
  })

  it.each([
    ["empty", ""],
    ["256 characters", "k".repeat(256)],
    ["a space", "two words"],
    ["non-ASCII", "clé"],
    ["a tab", "a\tb"]
  ])("refuses a key that is %s with 400 naming Idempotency-Key", async (_, key) => {
    const res = await fetch(`${server.api}/feedback`, {
      method: "POST",
      headers: [["content-type", "application/json"], ["idempotency-key", key]],
      body: JSON.stringify(body("Bad key"))
    }).then(async (r) => ({ status: r.status, body: await r.json() }))
    expect(res.status).toBe(400)
    expect(res.body._tag).toBe("DataValidationError")
    expect(res.body.message).toMatch(/^Idempotency-Key: /)
    expect(await postsTitled("Bad key")).toEqual([])
  })

  it("accepts a key of 255 visible ASCII characters", async () => {
    const key = Array.from({ length: 255 }, (_, i) => String.fromCharCode(0x21 + (i % 94))).join("")
    expect((await send(body("Long key"), key)).status).toBe(200)
    expect((await send(body("Long key"), key)).status).toBe(200)
    expect((await postsTitled("Long key")).length).toBe(1)
  })

  it("is documented as a header parameter of POST /feedback", async () => {
    const spec = (await getJson(`${server.origin}/docs/openapi.json`)).body
    const parameters = spec.paths["/api/widget/v1/feedback"].post.parameters
    const header = parameters.find((p: { name: string }) => p.name.toLowerCase() === "idempotency-key")
    expect(header).toMatchObject({ in: "header", required: false })
    expect(header.schema).toMatchObject({ type: "string" })
  })
})
