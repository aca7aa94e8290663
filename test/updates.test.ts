import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { baseFixture } from "./support/fixtures.js"
import { get, inMemoryServer, query } from "./support/inMemory.js"

const fixture = baseFixture()
fixture.organizations[0]!.updates = [
  { id: "u_old", title: "Old", slug: "old", content: "<p>Old news</p>", publishedAt: "2026-01-01T00:00:00.000Z" },
  { id: "u_tie_b", title: "Tie B", slug: "tie-b", content: "<p>b</p>", publishedAt: "2026-03-01T00:00:00.000Z" },
  { id: "u_tie_a", title: "Tie A", slug: "tie-a", content: "<p>a</p>", publishedAt: "2026-03-01T00:00:00.000Z" },
  {
    id: "u_rich", title: "Rich", slug: "rich", imageUrl: "https://cdn.example.com/cover.png",
    content: `<h2>New&nbsp;things</h2><p onclick="steal()">Fish &amp; chips &lt;3</p><script>alert(1)</script>` +
      `<img src="https://cdn.example.com/a.png" onerror="x()"><img src="data:image/png;base64,AAAA">` +
      `<a href="javascript:alert(1)">bad</a><iframe src="https://evil.example"></iframe>`,
    publishedAt: "2026-02-01T00:00:00.000Z"
  },
  { id: "u_excerpt", title: "Given excerpt", slug: "given", content: "<p>Body</p>",
    excerpt: "  <b>Short</b>\n\n   summary &amp; more ", publishedAt: "2026-01-15T00:00:00.000Z" },
  { id: "u_draft", title: "Draft", slug: "draft", content: "<p>draft</p>", publishedAt: null },
  { id: "u_future", title: "Scheduled", slug: "scheduled", content: "<p>later</p>", publishedAt: "2099-01-01T00:00:00.000Z" }
]
fixture.organizations[1]!.updates = [
  { id: "u_other", title: "Other org", slug: "other", content: "<p>x</p>", publishedAt: "2026-01-01T00:00:00.000Z" }
] as never
// A changelog longer than a page (Updates.pageSize, 200): 450 published entries, 30 of them sharing one
// time across the first page boundary (ties go by id), and drafts and scheduled entries among them.
const long = Array.from({ length: 450 }, (_, i) => ({
  id: `u_long_${String(i).padStart(3, "0")}`,
  title: `Entry ${i}`,
  slug: `entry-${i}`,
  content: `<p onclick="x()">Entry <b>${i}</b></p><script>alert(${i})</script>`,
  publishedAt: i >= 185 && i < 215
    ? "2026-06-01T00:00:00.000Z"
    : new Date(Date.UTC(2026, 0, 1) + i * 3_600_000).toISOString()
}))
const hidden = [
  { id: "u_long_draft", title: "Draft", slug: "draft", content: "<p>d</p>", publishedAt: null },
  { id: "u_long_later", title: "Later", slug: "later", content: "<p>l</p>", publishedAt: "2099-01-01T00:00:00.000Z" }
]
;(fixture.organizations[2] as Record<string, unknown>)["updates"] = [...hidden, ...long]

layer(inMemoryServer(fixture), { excludeTestServices: true })("GET /updates", (it) => {
  it.effect("returns published entries only, newest first, ties by id ascending", () =>
    Effect.gen(function*() {
      const res = yield* get("updates?organizationId=org_acme")
      expect(res.status).toBe(200)
      expect(res.body.map((u: { id: string }) => u.id)).toEqual(["u_tie_a", "u_tie_b", "u_rich", "u_excerpt", "u_old"])
    }))

  it.effect("serves exactly the spec's fields, sanitized HTML and a plain-text excerpt", () =>
    Effect.gen(function*() {
      const res = yield* get("updates?organizationId=org_acme")
      const rich = res.body.find((u: { id: string }) => u.id === "u_rich")
      expect(Object.keys(rich).sort()).toEqual(["content", "excerpt", "id", "imageUrl", "publishedAt", "slug", "title"])
      expect(rich.content).toBe(
        `<h2>New&nbsp;things</h2><p>Fish &amp; chips &lt;3</p><img src="https://cdn.example.com/a.png">` +
          `<a rel="noopener noreferrer nofollow ugc">bad</a>`
      )
      expect(rich.excerpt).toBe("New things Fish & chips <3 bad")
      expect(rich.imageUrl).toBe("https://cdn.example.com/cover.png")
      expect(rich.publishedAt).toBe("2026-02-01T00:00:00.000Z")
    }))

  it.effect("normalizes a given excerpt to plain text and defaults imageUrl to null", () =>
    Effect.gen(function*() {
      const res = yield* get("updates?organizationId=org_acme")
      const given = res.body.find((u: { id: string }) => u.id === "u_excerpt")
      expect(given.excerpt).toBe("Short summary & more")
      expect(given.imageUrl).toBeNull()
    }))

  it.effect("keeps organizations apart and answers [] for an unknown one", () =>
    Effect.gen(function*() {
      const other = yield* get("updates?organizationId=org_other")
      expect(other.body.map((u: { id: string }) => u.id)).toEqual(["u_other"])
      const none = yield* get("updates?organizationId=nobody")
      expect(none).toMatchObject({ status: 200, body: [] })
    }))

  it.effect("serves a changelog longer than a page whole, in order, sanitized, and the same again from the cache", () =>
    Effect.gen(function*() {
      const expected = [...long].sort((a, b) =>
        a.publishedAt === b.publishedAt ? (a.id < b.id ? -1 : 1) : (a.publishedAt < b.publishedAt ? 1 : -1))
      const first = yield* get("updates?organizationId=org_nostatus")
      expect(first.status).toBe(200)
      expect(first.headers.get("content-type")).toBe("application/json")
      const body = JSON.parse(first.text) as Array<{ id: string; content: string; publishedAt: string }>
      expect(body.map((u) => u.id)).toEqual(expected.map((u) => u.id))
      expect(body.find((u) => u.id === "u_long_200")!.content).toBe("<p>Entry <b>200</b></p>")
      const again = yield* get("updates?organizationId=org_nostatus")
      expect(again.headers.get("etag")).toBe(first.headers.get("etag"))
      expect(again.text).toBe(first.text)
    }))

  it.effect("keeps content as served, and sanitizes an entry again when its HTML changes", () =>
    Effect.gen(function*() {
      yield* get("updates?organizationId=org_nostatus")
      const kept = yield* query((sql) => sql`SELECT count(*)::int AS n FROM update_html WHERE update_id LIKE 'u_long_%'`)
      expect(kept).toEqual([{ n: 450 }])
      // What is kept is what is served while the entry's HTML is unchanged…
      yield* query((sql) => sql`UPDATE update_html SET html = '<p>kept</p>' WHERE update_id = 'u_long_001'`)
      // …and an entry whose HTML changed is sanitized again (another process's write: the tag changes too).
      yield* query((sql) => sql`UPDATE updates SET content = '<p>New <b>text</b><script>x()</script></p>' WHERE id = 'u_long_002'`)
      const res = yield* get("updates?organizationId=org_nostatus")
      const byId = new Map(res.body.map((u: { id: string; content: string }) => [u.id, u.content]))
      expect(byId.get("u_long_001")).toBe("<p>kept</p>")
      expect(byId.get("u_long_002")).toBe("<p>New <b>text</b></p>")
      expect(byId.get("u_long_003")).toBe("<p>Entry <b>3</b></p>")
    }))

  it.effect("refuses a missing organizationId with 400 DataValidationError", () =>
    Effect.gen(function*() {
      const res = yield* get("updates")
      expect(res.status).toBe(400)
      expect(res.body).toEqual({ _tag: "DataValidationError", message: "organizationId: is required" })
    }))
})
