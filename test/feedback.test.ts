import { describe, expect, it } from "vitest"
import { baseFixture } from "./support/fixtures.js"
import { postJson, startSeededServer, useServer } from "./support/server.js"

const fixture = baseFixture()
fixture.organizations[0]!.posts = [
  { id: "p_taken", boardId: "b_feat", title: "Taken", content: "<p>x</p>", slug: "dark-mode" },
  { id: "p_numbered", boardId: "b_feat", title: "Numbered", content: "<p>x</p>", slug: "export-csv-7" }
]

const server = useServer(() => startSeededServer(fixture))

const post = (body: Record<string, unknown>) => postJson(`${server.api}/feedback`, body)
const valid = { organizationId: "org_acme", boardId: "b_feat", title: "Dark mode", content: "<p>Please</p>" }
const isoMs = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

const stored = async (id: string) => {
  const [row] = await server.db.query((sql) =>
    sql`SELECT title, content, excerpt, slug, status_id AS "statusId", metadata, visibility, source,
               organization_id AS "organizationId", board_id AS "boardId"
        FROM posts WHERE id = ${id}`
  )
  return row as Record<string, unknown>
}

describe("POST /feedback", () => {
  it("creates a post and echoes exactly the spec's fields", async () => {
    const before = Date.now()
    const res = await post({ ...valid, metadata: { plan: "pro", page: "/settings" } })
    expect(res.status).toBe(200)
    expect(Object.keys(res.body).sort()).toEqual(["boardId", "createdAt", "id", "organizationId", "slug", "title"])
    expect(res.body).toMatchObject({ title: "Dark mode", boardId: "b_feat", organizationId: "org_acme" })
    expect(res.body.createdAt).toMatch(isoMs)
    expect(Date.parse(res.body.createdAt)).toBeGreaterThanOrEqual(before - 5_000)
    const row = await stored(res.body.id)
    expect(row).toMatchObject({
      title: "Dark mode",
      statusId: "st_acme_open",
      metadata: { plan: "pro", page: "/settings" },
      visibility: "public",
      source: "widget",
      boardId: "b_feat",
      organizationId: "org_acme"
    })
  })

  it("gives unique lowercase ASCII slugs within the organization", async () => {
    // `dark-mode` is taken by the fixture; the first test took `dark-mode-2`.
    const a = await post(valid)
    const b = await post(valid)
    expect([a.body.slug, b.body.slug]).toEqual(["dark-mode-3", "dark-mode-4"])
    const accents = await post({ ...valid, title: "Crème brûlée: Ünïcode & Co!" })
    expect(accents.body.slug).toBe("creme-brulee-unicode-co")
    const other = await post({ ...valid, organizationId: "org_other", boardId: "b_other" })
    expect(other.body.slug).toBe("dark-mode")
  })

  it("numbers a title's slug after the highest number in use, and steps over one taken since", async () => {
    expect((await post({ ...valid, title: "Export CSV" })).body.slug).toBe("export-csv-8")
    // Written by another process (an import with explicit slugs) after the counter moved on.
    await server.db.query((sql) => sql`INSERT INTO posts (id, organization_id, board_id, title, slug, content, excerpt, source)
      VALUES ('p_explicit', 'org_acme', 'b_feat', 'Export CSV', 'export-csv-9', '', '', 'import')`)
    expect((await post({ ...valid, title: "Export CSV" })).body.slug).toBe("export-csv-10")
    // Many numbers taken at once by another writer cost one catch-up, not one try each.
    await server.db.query((sql) => sql`INSERT INTO posts (id, organization_id, board_id, title, slug, content, excerpt, source)
      SELECT 'p_bulk_' || n, 'org_acme', 'b_feat', 'Export CSV', 'export-csv-' || n, '', '', 'import' FROM generate_series(11, 60) n`)
    expect((await post({ ...valid, title: "Export CSV" })).body).toMatchObject({ slug: "export-csv-61" })
  })

  it("falls back to a non-empty slug for titles with no ASCII letters or digits", async () => {
    const first = await post({ ...valid, title: "🎉🎉🎉" })
    const second = await post({ ...valid, title: "日本語のタイトル" })
    expect(first.body.slug).toMatch(/^[a-z0-9-]+$/)
    expect(second.body.slug).toMatch(/^[a-z0-9-]+$/)
    expect(first.body.slug).not.toBe(second.body.slug)
  })

  it("keeps slugs unique under concurrent submissions: 200 at once with one title", async () => {
    const results = await Promise.all(Array.from({ length: 200 }, () => post({ ...valid, title: "Race condition" })))
    expect(results.map((r) => r.status)).toEqual(Array(200).fill(200))
    const slugs = results.map((r) => r.body.slug).sort()
    expect(new Set(slugs).size).toBe(200)
    expect(slugs).toContain("race-condition")
    expect(slugs).toContain("race-condition-200")
  })

  it("assigns the status marked default, else the organization's first status", async () => {
    const acme = await post(valid)
    expect((await stored(acme.body.id)).statusId).toBe("st_acme_open")
    const other = await post({ ...valid, organizationId: "org_other", boardId: "b_other" })
    expect((await stored(other.body.id)).statusId).toBe("st_other_first")
  })

  it("answers 500 with a message when the organization has no statuses, with or without an Idempotency-Key", async () => {
    const body = { ...valid, organizationId: "org_nostatus", boardId: "b_nostatus" }
    for (const res of [await post(body), await postJson(`${server.api}/feedback`, body, { "idempotency-key": "no-statuses" })]) {
      expect(res.status).toBe(500)
      expect(res.body).toEqual({ _tag: "InternalServerError", message: "The organization has no post statuses configured" })
    }
  })

  it("sanitizes content before storage and derives a plain-text excerpt", async () => {
    const res = await post({ ...valid, content: `<p onmouseover="x()">Hi <script>alert(1)</script><b>there</b></p><img src="https://x/y.png">` })
    const row = await stored(res.body.id)
    expect(row.content).toBe("<p>Hi <b>there</b></p>")
    expect(row.excerpt).toBe("Hi there")
  })

  it("answers 404 NotFoundError for an unknown board or another organization's board", async () => {
    for (const body of [{ ...valid, boardId: "b_nope" }, { ...valid, boardId: "b_other" }, { ...valid, organizationId: "nobody" }]) {
      const res = await post(body)
      expect(res.status).toBe(404)
      expect(res.body._tag).toBe("NotFoundError")
    }
  })

  it("refuses a private board with 400 DataValidationError and stores nothing", async () => {
    const res = await post({ ...valid, boardId: "b_private", title: "Secret attempt" })
    expect(res.status).toBe(400)
    expect(res.body).toEqual({ _tag: "DataValidationError", message: "boardId: feedback cannot be submitted to a private board" })
    const rows = await server.db.query((sql) => sql`SELECT id FROM posts WHERE title = 'Secret attempt'`)
    expect(rows).toEqual([])
  })

  it("refuses a token that fails verification with 401 UnauthorizedError and stores nothing", async () => {
    const res = await post({ ...valid, title: "With token", token: "eyJhbGciOiJIUzI1NiJ9.e30.x" })
    expect(res.status).toBe(401)
    expect(res.body).toEqual({ _tag: "UnauthorizedError", message: "token: malformed" })
    const rows = await server.db.query((sql) => sql`SELECT id FROM posts WHERE title = 'With token'`)
    expect(rows).toEqual([])
  })

  it("ignores unknown fields and does not let the client choose a status", async () => {
    const res = await post({ ...valid, statusId: "st_acme_done", status: "done", extra: { a: 1 } })
    expect(res.status).toBe(200)
    expect((await stored(res.body.id)).statusId).toBe("st_acme_open")
  })
})
