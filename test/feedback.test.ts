import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { baseFixture } from "./support/fixtures.js"
import { inMemoryServer, post as send, query } from "./support/inMemory.js"

const fixture = baseFixture()
fixture.organizations[0]!.posts = [
  { id: "p_taken", boardId: "b_feat", title: "Taken", content: "<p>x</p>", slug: "dark-mode" },
  { id: "p_numbered", boardId: "b_feat", title: "Numbered", content: "<p>x</p>", slug: "export-csv-7" }
]

const post = (body: Record<string, unknown>) => send("feedback", body)
const valid = { organizationId: "org_acme", boardId: "b_feat", title: "Dark mode", content: "<p>Please</p>" }
const isoMs = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

const stored = (id: string) => Effect.gen(function*() {
  const [row] = yield* query((sql) =>
    sql`SELECT title, content, excerpt, slug, status_id AS "statusId", metadata, visibility, source,
               organization_id AS "organizationId", board_id AS "boardId"
        FROM posts WHERE id = ${id}`
  )
  return row as Record<string, unknown>
})

layer(inMemoryServer(fixture), { excludeTestServices: true })("POST /feedback", (it) => {
  it.effect("creates a post and echoes exactly the spec's fields", () =>
    Effect.gen(function*() {
      const before = Date.now()
      const res = yield* post({ ...valid, metadata: { plan: "pro", page: "/settings" } })
      expect(res.status).toBe(200)
      expect(Object.keys(res.body).sort()).toEqual(["boardId", "createdAt", "id", "organizationId", "slug", "title"])
      expect(res.body).toMatchObject({ title: "Dark mode", boardId: "b_feat", organizationId: "org_acme" })
      expect(res.body.createdAt).toMatch(isoMs)
      expect(Date.parse(res.body.createdAt)).toBeGreaterThanOrEqual(before - 5_000)
      const row = yield* stored(res.body.id)
      expect(row).toMatchObject({
        title: "Dark mode",
        statusId: "st_acme_open",
        metadata: { plan: "pro", page: "/settings" },
        visibility: "public",
        source: "widget",
        boardId: "b_feat",
        organizationId: "org_acme"
      })
    }))

  it.effect("gives unique lowercase ASCII slugs within the organization", () =>
    Effect.gen(function*() {
      // `dark-mode` is taken by the fixture; the first test took `dark-mode-2`.
      const a = yield* post(valid)
      const b = yield* post(valid)
      expect([a.body.slug, b.body.slug]).toEqual(["dark-mode-3", "dark-mode-4"])
      const accents = yield* post({ ...valid, title: "Crème brûlée: Ünïcode & Co!" })
      expect(accents.body.slug).toBe("creme-brulee-unicode-co")
      const other = yield* post({ ...valid, organizationId: "org_other", boardId: "b_other" })
      expect(other.body.slug).toBe("dark-mode")
    }))

  it.effect("numbers a title's slug after the highest number in use, and steps over one taken since", () =>
    Effect.gen(function*() {
      expect((yield* post({ ...valid, title: "Export CSV" })).body.slug).toBe("export-csv-8")
      // Written by another process (an import with explicit slugs) after the counter moved on.
      yield* query((sql) => sql`INSERT INTO posts (id, organization_id, board_id, title, slug, content, excerpt, source)
        VALUES ('p_explicit', 'org_acme', 'b_feat', 'Export CSV', 'export-csv-9', '', '', 'import')`)
      expect((yield* post({ ...valid, title: "Export CSV" })).body.slug).toBe("export-csv-10")
      // Many numbers taken at once by another writer cost one catch-up, not one try each.
      yield* query((sql) => sql`INSERT INTO posts (id, organization_id, board_id, title, slug, content, excerpt, source)
        SELECT 'p_bulk_' || n, 'org_acme', 'b_feat', 'Export CSV', 'export-csv-' || n, '', '', 'import' FROM generate_series(11, 60) n`)
      expect((yield* post({ ...valid, title: "Export CSV" })).body).toMatchObject({ slug: "export-csv-61" })
    }))

  it.effect("falls back to a non-empty slug for titles with no ASCII letters or digits", () =>
    Effect.gen(function*() {
      const first = yield* post({ ...valid, title: "🎉🎉🎉" })
      const second = yield* post({ ...valid, title: "日本語のタイトル" })
      expect(first.body.slug).toMatch(/^[a-z0-9-]+$/)
      expect(second.body.slug).toMatch(/^[a-z0-9-]+$/)
      expect(first.body.slug).not.toBe(second.body.slug)
    }))

  it.effect("keeps slugs unique under concurrent submissions: 200 at once with one title", () =>
    Effect.gen(function*() {
      const results = yield* Effect.all(Array.from({ length: 200 }, () => post({ ...valid, title: "Race condition" })), { concurrency: "unbounded" })
      expect(results.map((r) => r.status)).toEqual(Array(200).fill(200))
      const slugs = results.map((r) => r.body.slug).sort()
      expect(new Set(slugs).size).toBe(200)
      expect(slugs).toContain("race-condition")
      expect(slugs).toContain("race-condition-200")
    }))

  it.effect("assigns the status marked default, else the organization's first status", () =>
    Effect.gen(function*() {
      const acme = yield* post(valid)
      expect((yield* stored(acme.body.id)).statusId).toBe("st_acme_open")
      const other = yield* post({ ...valid, organizationId: "org_other", boardId: "b_other" })
      expect((yield* stored(other.body.id)).statusId).toBe("st_other_first")
    }))

  it.effect("answers 500 with a message when the organization has no statuses, with or without an Idempotency-Key", () =>
    Effect.gen(function*() {
      const body = { ...valid, organizationId: "org_nostatus", boardId: "b_nostatus" }
      for (const res of [yield* post(body), yield* send("feedback", body, { "idempotency-key": "no-statuses" })]) {
        expect(res.status).toBe(500)
        expect(res.body).toEqual({ _tag: "InternalServerError", message: "The organization has no post statuses configured" })
      }
    }))

  it.effect("sanitizes content before storage and derives a plain-text excerpt", () =>
    Effect.gen(function*() {
      const res = yield* post({ ...valid, content: `<p onmouseover="x()">Hi <script>alert(1)</script><b>there</b></p><img src="https://x/y.png">` })
      const row = yield* stored(res.body.id)
      expect(row.content).toBe("<p>Hi <b>there</b></p>")
      expect(row.excerpt).toBe("Hi there")
    }))

  it.effect("answers 404 NotFoundError for an unknown board or another organization's board", () =>
    Effect.gen(function*() {
      for (const body of [{ ...valid, boardId: "b_nope" }, { ...valid, boardId: "b_other" }, { ...valid, organizationId: "nobody" }]) {
        const res = yield* post(body)
        expect(res.status).toBe(404)
        expect(res.body._tag).toBe("NotFoundError")
      }
    }))

  it.effect("refuses a private board with 400 DataValidationError and stores nothing", () =>
    Effect.gen(function*() {
      const res = yield* post({ ...valid, boardId: "b_private", title: "Secret attempt" })
      expect(res.status).toBe(400)
      expect(res.body).toEqual({ _tag: "DataValidationError", message: "boardId: feedback cannot be submitted to a private board" })
      const rows = yield* query((sql) => sql`SELECT id FROM posts WHERE title = 'Secret attempt'`)
      expect(rows).toEqual([])
    }))

  it.effect("refuses a token that fails verification with 401 UnauthorizedError and stores nothing", () =>
    Effect.gen(function*() {
      const res = yield* post({ ...valid, title: "With token", token: "eyJhbGciOiJIUzI1NiJ9.e30.x" })
      expect(res.status).toBe(401)
      expect(res.body).toEqual({ _tag: "UnauthorizedError", message: "token: malformed" })
      const rows = yield* query((sql) => sql`SELECT id FROM posts WHERE title = 'With token'`)
      expect(rows).toEqual([])
    }))

  it.effect("ignores unknown fields and does not let the client choose a status", () =>
    Effect.gen(function*() {
      const res = yield* post({ ...valid, statusId: "st_acme_done", status: "done", extra: { a: 1 } })
      expect(res.status).toBe(200)
      expect((yield* stored(res.body.id)).statusId).toBe("st_acme_open")
    }))
})
