import { execFile } from "node:child_process"
import { mkdtemp, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createDatabase, databaseEnv, type TestDatabase } from "./support/database.js"
import { baseFixture } from "./support/fixtures.js"
import { postJson, startSeededServer, useServer } from "./support/server.js"
import { eventually } from "./support/wait.js"

const run = promisify(execFile)
const seedScript = join(import.meta.dirname, "..", "packages", "server", "dist", "seed.js")

let db: TestDatabase
let dir: string
beforeAll(async () => {
  db = await createDatabase()
  dir = await mkdtemp(join(tmpdir(), "hearken-seed-"))
})
afterAll(() => db?.drop())

/** `env` but its `DATABASE_URL`, which `seed` passes through `databaseEnv`. */
const withoutDatabaseUrl = ({ DATABASE_URL: _, ...env }: Record<string, string>) => env

/** `npm run seed -- FILE` as a user runs it: a child process on the same Node. `env` adds to its environment. */
const seed = async (fixture: unknown, name = "fixture.json", env: Record<string, string> = {}) => {
  const file = join(dir, name)
  await writeFile(file, typeof fixture === "string" ? fixture : JSON.stringify(fixture))
  try {
    const { stdout, stderr } = await run(process.execPath, [seedScript, file], {
      env: { PATH: process.env["PATH"] ?? "", ...databaseEnv(env["DATABASE_URL"] ?? db.url), LOG_LEVEL: "error", ...withoutDatabaseUrl(env) }
    })
    return { code: 0, stdout, stderr }
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string }
    return { code: e.code, stdout: e.stdout, stderr: e.stderr }
  }
}

const counts = async () => {
  const [row] = await db.query((sql) => sql`SELECT
    (SELECT count(*)::int FROM organizations) AS organizations, (SELECT count(*)::int FROM boards) AS boards,
    (SELECT count(*)::int FROM posts) AS posts, (SELECT count(*)::int FROM updates) AS updates,
    (SELECT count(*)::int FROM statuses) AS statuses, (SELECT count(*)::int FROM webhook_endpoints) AS webhooks,
    (SELECT count(*)::int FROM organization_jwt_secrets) AS secrets`)
  return row
}

const snapshot = () =>
  db.query((sql) => sql`SELECT id, slug, title, content, excerpt, status_id, created_at, updated_at FROM posts
    UNION ALL SELECT id, slug, name, visibility, organization_id, NULL, created_at, updated_at FROM boards
    UNION ALL SELECT id, slug, title, content, excerpt, image_url, published_at, created_at FROM updates ORDER BY 1`)

const full = () => {
  const f = baseFixture()
  f.organizations[0]!.posts = [
    { id: "p_1", boardId: "b_feat", title: "Dark mode", content: "<p>Please <script>x</script>add</p>", statusId: "st_acme_done",
      createdAt: "2026-01-03T00:00:00.000Z" },
    { id: "p_2", boardId: "b_feat", title: "Dark mode", content: "<p>again</p>" },
    { id: "p_3", boardId: "b_bugs", title: "Crash", content: "", visibility: "private", slug: "crash-report" }
  ]
  f.organizations[0]!.updates = [
    { id: "u_1", title: "Dark mode is here", slug: "dark-mode-is-here", content: "<p>Try it now</p>", excerpt: "Try it now",
      imageUrl: null, publishedAt: "2026-02-01T00:00:00.000Z" }
  ]
  ;(f.organizations[0] as Record<string, unknown>)["webhooks"] = [
    { id: "wh_1", url: "https://example.com/hook", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", events: ["feedback.post.created"] }
  ]
  return f
}

describe("npm run seed -- FILE", () => {
  it("creates the schema on an empty database and imports everything", async () => {
    const result = await seed(full())
    expect(result.code).toBe(0)
    expect(await counts()).toEqual({ organizations: 3, boards: 7, posts: 3, updates: 1, statuses: 5, webhooks: 1, secrets: 1 })
    const [post] = await db.query((sql) => sql`SELECT content, excerpt, slug, status_id AS "statusId" FROM posts WHERE id = 'p_1'`)
    expect(post).toEqual({ content: "<p>Please add</p>", excerpt: "Please add", slug: "dark-mode", statusId: "st_acme_done" })
    const slugs = await db.query((sql) => sql`SELECT id, slug, status_id AS "statusId" FROM posts ORDER BY id`)
    expect(slugs).toEqual([
      { id: "p_1", slug: "dark-mode", statusId: "st_acme_done" },
      { id: "p_2", slug: "dark-mode-2", statusId: "st_acme_open" },
      { id: "p_3", slug: "crash-report", statusId: "st_acme_open" }
    ])
  })

  it("is idempotent: importing the same file again changes nothing", async () => {
    const before = await snapshot()
    expect((await seed(full())).code).toBe(0)
    expect(await snapshot()).toEqual(before)
    expect(await counts()).toEqual({ organizations: 3, boards: 7, posts: 3, updates: 1, statuses: 5, webhooks: 1, secrets: 1 })
  })

  it.each([
    ["a dangling post boardId", (f: any) => { f.organizations[0].posts[1].boardId = "b_missing" }, "organizations[0].posts[1].boardId"],
    ["a dangling post statusId", (f: any) => { f.organizations[0].posts[0].statusId = "st_missing" }, "organizations[0].posts[0].statusId"],
    ["a status of another organization", (f: any) => { f.organizations[0].posts[0].statusId = "st_other_first" }, "organizations[0].posts[0].statusId"],
    // A post is placed in its organization's default status (docs/api.md: "Routes"); with no status at all there is none to place it in.
    ["a post without statusId in an organization with no statuses", (f: any) => { f.organizations[2].posts = [{ id: "p_x", boardId: "b_nostatus", title: "x", content: "" }] }, "organizations[2].posts[0].statusId"],
    ["a board of another organization", (f: any) => { f.organizations[1].posts = [{ id: "p_x", boardId: "b_feat", title: "x", content: "" }] }, "organizations[1].posts[0].boardId"],
    ["a bad visibility", (f: any) => { f.organizations[0].boards[2].visibility = "secret" }, "organizations[0].boards[2].visibility"],
    ["a bad timestamp", (f: any) => { f.organizations[0].boards[0].createdAt = "yesterday" }, "organizations[0].boards[0].createdAt"],
    // Each of these once passed the schema and failed inside PostgreSQL, naming no path.
    ["February 30th", (f: any) => { f.organizations[0].posts[0].createdAt = "2026-02-30T00:00:00Z" }, "organizations[0].posts[0].createdAt"],
    ["February 29th of a common year", (f: any) => { f.organizations[0].boards[1].updatedAt = "2027-02-29T00:00:00Z" }, "organizations[0].boards[1].updatedAt"],
    ["the year 0000", (f: any) => { f.organizations[0].updates[0].publishedAt = "0000-01-01T00:00:00Z" }, "organizations[0].updates[0].publishedAt"],
    ["a year past 9999 in UTC", (f: any) => { f.organizations[0].boards[0].createdAt = "9999-12-31T23:00:00-14:00" }, "organizations[0].boards[0].createdAt"],
    ["an offset PostgreSQL cannot read", (f: any) => { f.organizations[0].posts[0].createdAt = "2026-01-01T00:00:00+16:00" }, "organizations[0].posts[0].createdAt"],
    ["hour 24", (f: any) => { f.organizations[0].posts[0].createdAt = "2026-01-01T24:00:00Z" }, "organizations[0].posts[0].createdAt"],
    ["month 13", (f: any) => { f.organizations[0].posts[0].createdAt = "2026-13-01T00:00:00Z" }, "organizations[0].posts[0].createdAt"],
    ["a missing title", (f: any) => { delete f.organizations[0].posts[2].title }, "organizations[0].posts[2].title"],
    ["an unknown key", (f: any) => { f.organizations[0].boards[1].visiblity = "public" }, "organizations[0].boards[1].visiblity"],
    ["a duplicate id", (f: any) => { f.organizations[0].posts[1].id = "p_1" }, "organizations[0].posts[1].id"],
    ["a bad webhook URL", (f: any) => { f.organizations[0].webhooks[0].url = "ftp://x" }, "organizations[0].webhooks[0].url"],
    ["a NUL character in an id", (f: any) => { f.organizations[0].boards[0].id = "b\u0000x" }, "organizations[0].boards[0].id"],
    // Longer than the API takes: a row no request could name (decision 0025).
    ["an organization id of 201 characters", (f: any) => { f.organizations[0].id = "o".repeat(201) }, "organizations[0].id"],
    ["a board id of 201 emoji", (f: any) => { f.organizations[0].boards[0].id = "😀".repeat(201) }, "organizations[0].boards[0].id"],
    ["a post boardId of 201 characters", (f: any) => { f.organizations[0].posts[1].boardId = "b".repeat(201) }, "organizations[0].posts[1].boardId"],
    ["a lone surrogate in a post title", (f: any) => { f.organizations[0].posts[0].title = "x\ud800" }, "organizations[0].posts[0].title"],
    ["a lone surrogate in a board name", (f: any) => { f.organizations[0].boards[0].name = "\udc00" }, "organizations[0].boards[0].name"],
    ["a lone surrogate in post content", (f: any) => { f.organizations[0].posts[1].content = "<p>\ud83d</p>" }, "organizations[0].posts[1].content"],
    ["a JWT secret shorter than 32 bytes", (f: any) => { f.organizations[0].jwtSecrets = ["long-enough-secret-0123456789abcdef", "tooShortSecret"] }, "organizations[0].jwtSecrets[1]"],
    ["an id owned by another organization", (f: any) => { f.organizations[1].boards.push({ id: "b_feat", name: "x", slug: "x", visibility: "public" }) }, "organizations[1].boards[1].id"]
  ])("refuses %s, naming its path, and writes nothing", async (_, mutate, path) => {
    const before = await snapshot()
    const f = full()
    f.organizations[0]!.posts!.push({ id: "p_new_should_not_exist", boardId: "b_feat", title: "New", content: "" })
    mutate(f)
    const result = await seed(f, "bad.json")
    expect(result.code).toBe(1)
    expect(result.stderr.trim().split("\n")).toHaveLength(1)
    expect(result.stderr).toContain(`${path}:`)
    expect(result.stderr).not.toContain("tooShortSecret")
    expect(await snapshot()).toEqual(before)
    expect(await db.query((sql) => sql`SELECT id FROM posts WHERE id = 'p_new_should_not_exist'`)).toEqual([])
  })

  it("accepts real timestamps at the edges: a leap day, the years 0001 and 9999, offsets", async () => {
    const f: any = full()
    f.organizations[0].posts[0].createdAt = "2028-02-29T23:59:59.999999+01:00"
    f.organizations[0].boards[1].createdAt = "0001-01-01T00:00:00Z"
    f.organizations[0].boards[1].updatedAt = "9999-12-31T23:59:59.999Z"
    f.organizations[0].updates[0].publishedAt = "2026-07-01T05:30-04:30"
    expect((await seed(f, "edges.json")).code).toBe(0)
    const rows = await db.query((sql) => sql`SELECT iso_ms(created_at) AS at FROM posts WHERE id = 'p_1'
      UNION ALL SELECT iso_ms(created_at) FROM boards WHERE id = 'b_bugs' UNION ALL SELECT iso_ms(updated_at) FROM boards WHERE id = 'b_bugs'
      UNION ALL SELECT iso_ms(published_at) FROM updates WHERE id = 'u_1'`)
    expect(rows.map((r) => r["at"])).toEqual(
      ["2028-02-29T22:59:59.999Z", "0001-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z", "2026-07-01T10:00:00.000Z"]
    )
    expect((await seed(full(), "restore.json")).code).toBe(0)
  })

  it("takes ids as long as the API takes, 200 code points, and says the limit of a longer one (decision 0025)", async () => {
    const long = "😀".repeat(200)
    const f: any = { organizations: [{ id: `o${long.slice(2)}`, name: "Long ids", statuses: [{ id: long, name: "Open" }],
      boards: [{ id: long, name: "Long", slug: "long", visibility: "public" }],
      posts: [{ id: long, boardId: long, title: "Long", content: "" }] }] }
    expect((await seed(f, "long-ids.json")).code).toBe(0)
    const [row] = await db.query((sql) => sql`SELECT char_length(id) AS n, char_length(board_id) AS b FROM posts WHERE id = ${long}`)
    expect(row).toEqual({ n: 200, b: 200 })
    f.organizations[0].boards[0].id = `${long}x`
    const refused = await seed(f, "longer-ids.json")
    expect(refused.code).toBe(1)
    expect(refused.stderr.trim()).toBe("hearken: organizations[0].boards[0].id: Expected a string with at most 200 code points")
    await db.query((sql) => sql`DELETE FROM organizations WHERE id = ${f.organizations[0].id}`)
  })

  it("refuses a file that is not JSON, and a missing file, with one line", async () => {
    const notJson = await seed("{ nope", "broken.json")
    expect(notJson.code).toBe(1)
    expect(notJson.stderr).toMatch(/broken\.json: is not valid JSON/)
    const { code, stderr } = await run(process.execPath, [seedScript, join(dir, "absent.json")], {
      env: { PATH: process.env["PATH"] ?? "", ...databaseEnv(db.url) }
    }).then(() => ({ code: 0, stderr: "" }), (e: { code: number; stderr: string }) => e)
    expect(code).toBe(1)
    expect(stderr).toMatch(/absent\.json: cannot be read \(ENOENT\)/)
  })

  it("accepts empty jwtSecrets, statuses and events lists", async () => {
    const result = await seed({ organizations: [{ id: "org_empty", name: "Empty", jwtSecrets: [], statuses: [],
      webhooks: [{ id: "wh_empty", url: "https://example.com/h", secret: "whsec_AAAA", events: [] }], boards: [] }] }, "empty.json")
    expect(result.code).toBe(0)
    const [hook] = await db.query((sql) => sql`SELECT events FROM webhook_endpoints WHERE id = 'wh_empty'`)
    expect(hook).toEqual({ events: [] })
  })

  describe("says what it changed, one line per organization (docs/operations.md: \"Re-seeding\")", () => {
    const jwt1 = "summary-first-secret-0123456789abcdef0123"
    const jwt2 = "summary-second-secret-0123456789abcdef012"
    const hook1 = "whsec_c3VtbWFyeS1maXJzdC13ZWJob29rLXNlY3JldA=="
    const hook2 = "whsec_c3VtbWFyeS1zZWNvbmQtd2ViaG9vay1zZWNyZXQ="
    const version1 = () => ({
      id: "org_sum",
      name: "Summary",
      jwtSecrets: [jwt1],
      statuses: [{ id: "st_sum_a", name: "A", isDefault: true }, { id: "st_sum_b", name: "B" }],
      boards: [{ id: "b_sum", name: "Board", slug: "board", visibility: "public" }],
      posts: [
        { id: "p_sum_1", boardId: "b_sum", title: "One", content: "<p>one</p>", statusId: "st_sum_a" },
        { id: "p_sum_2", boardId: "b_sum", title: "Two", content: "", statusId: "st_sum_b" }
      ],
      updates: [{ id: "u_sum", title: "News", slug: "news", content: "<p>news</p>" }],
      webhooks: [
        { id: "wh_sum_1", url: "https://example.com/1", secret: hook1, events: ["feedback.post.created"] },
        { id: "wh_sum_2", url: "https://example.com/2", secret: hook2, events: ["feedback.post.created"] }
      ]
    })
    /** The `Seeded …` lines of an import at the default log level; the secrets are never among them. */
    const seeded = async (organization: unknown) => {
      const result = await seed({ organizations: [organization] }, "summary.json", { LOG_LEVEL: "info" })
      expect(result.code).toBe(0)
      for (const secret of [jwt1, jwt2, hook1, hook2]) expect(result.stdout).not.toContain(secret)
      return result.stdout.split("\n").flatMap((line) => /INFO .*?: (Seeded .*)$/.exec(line)?.[1] ?? [])
    }
    /** Each row's transaction id: a row not written keeps its own. */
    const versions = () =>
      db.query((sql) => sql`SELECT id, xmin::text AS version FROM statuses WHERE organization_id = 'org_sum'
        UNION ALL SELECT id, xmin::text FROM boards WHERE organization_id = 'org_sum'
        UNION ALL SELECT id, xmin::text FROM posts WHERE organization_id = 'org_sum'
        UNION ALL SELECT id, xmin::text FROM updates WHERE organization_id = 'org_sum'
        UNION ALL SELECT id, xmin::text FROM webhook_endpoints WHERE organization_id = 'org_sum' ORDER BY 1`)

    it("+ created", async () => {
      expect(await seeded(version1())).toEqual([
        "Seeded org_sum: statuses +2 ~0 =0, boards +1 ~0 =0, posts +2 ~0 =0, updates +1 ~0 =0, webhooks +2 ~0 =0 -0, identity secrets +1 =0 -0"
      ])
    })

    it("= already as the file says, and not written", async () => {
      const before = await versions()
      expect(before).toHaveLength(8)
      expect(await seeded(version1())).toEqual([
        "Seeded org_sum: statuses +0 ~0 =2, boards +0 ~0 =1, posts +0 ~0 =2, updates +0 ~0 =1, webhooks +0 ~0 =2 -0, identity secrets +0 =1 -0"
      ])
      expect(await versions()).toEqual(before)
    })

    it("~ changed, - deleted with the endpoints' ids, and a default status moved away from one the file leaves out", async () => {
      const version2 = version1()
      version2.jwtSecrets = [jwt2, jwt1]
      version2.statuses = [{ id: "st_sum_b", name: "B", isDefault: true }]
      version2.boards.push({ id: "b_sum_2", name: "Second", slug: "second", visibility: "private" })
      version2.posts[0]!.title = "One, renamed"
      version2.updates[0]!.content = "<p>news, corrected</p>"
      // Only the URL differs: changed all the same.
      version2.webhooks = [{ ...version2.webhooks[0]!, url: "https://example.com/one" }]
      expect(await seeded(version2)).toEqual([
        "Seeded org_sum: statuses +0 ~1 =0 (1 status not in the file no longer the default), boards +1 ~0 =1, " +
        "posts +0 ~1 =1, updates +0 ~1 =0, webhooks +0 ~1 =0 -1 (deleted \"wh_sum_2\"), identity secrets +1 =1 -0"
      ])
      const statuses = await db.query((sql) => sql`SELECT id, is_default AS "isDefault" FROM statuses WHERE organization_id = 'org_sum' ORDER BY id`)
      expect(statuses).toEqual([{ id: "st_sum_a", isDefault: false }, { id: "st_sum_b", isDefault: true }])
      const hooks = await db.query((sql) => sql`SELECT id, url FROM webhook_endpoints WHERE organization_id = 'org_sum'`)
      expect(hooks).toEqual([{ id: "wh_sum_1", url: "https://example.com/one" }])
    })
  })
})

describe("npm run seed while the server takes posts (decision 0020)", () => {
  const first = baseFixture()
  first.organizations[0]!.posts = [{ id: "p_dark", boardId: "b_feat", title: "Dark mode", content: "" }]
  first.organizations[0]!.updates = [{ id: "u_lock", title: "Locked", slug: "locked", content: "", publishedAt: null }]
  const server = useServer(() => startSeededServer(first))

  it("never makes a widget post wait on an import's transaction, and no slug is given twice", async () => {
    // The import's last step (the update) waits on this row lock, so its transaction stays open after its posts.
    const holder = new pg.Client({ connectionString: server.db.url })
    await holder.connect()
    try {
      await holder.query("BEGIN")
      await holder.query("SELECT 1 FROM updates WHERE id = 'u_lock' FOR UPDATE")
      const second = baseFixture()
      second.organizations[0]!.posts = [
        { id: "p_dark", boardId: "b_feat", title: "Dark mode", content: "" },
        { id: "p_dark_again", boardId: "b_feat", title: "Dark mode", content: "" },
        { id: "p_export", boardId: "b_feat", title: "Export", content: "", slug: "export-csv" }
      ]
      second.organizations[0]!.updates = [{ id: "u_lock", title: "Locked, renamed", slug: "locked", content: "", publishedAt: null }]
      const importing = seed(second, "while-serving.json", { DATABASE_URL: server.db.url, DATABASE_STATEMENT_TIMEOUT_MS: "120000" })
      const importWaiting = () => server.db.query((sql) => sql`SELECT 1 FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'WITH up AS (INSERT INTO updates%'`)
        .then((rows) => rows.length === 1 ? true : undefined)
      await eventually("the import to wait on the held update row", importWaiting)

      const post = (title: string) =>
        postJson(`${server.api}/feedback`, { organizationId: "org_acme", boardId: "b_feat", title, content: "<p>x</p>" })
      const dark = await post("Dark mode")
      const exported = await post("Export CSV")
      // "Dark mode 2" derives `dark-mode-2` first, the slug the import claimed for its second "Dark mode".
      const darkTwo = await post("Dark mode 2")
      expect([[dark.status, dark.body.slug], [exported.status, exported.body.slug], [darkTwo.status, darkTwo.body.slug]])
        .toEqual([[200, "dark-mode-3"], [200, "export-csv-2"], [200, "dark-mode-2-2"]])
      // Both answered while the import's transaction was still open: they did not wait for it.
      expect(await importWaiting()).toBe(true)

      await holder.query("ROLLBACK")
      expect((await importing).code).toBe(0)
      const slugs = await server.db.query((sql) => sql`SELECT slug FROM posts WHERE organization_id = 'org_acme' ORDER BY slug`)
      expect(slugs.map((r) => r["slug"])).toEqual(["dark-mode", "dark-mode-2", "dark-mode-2-2", "dark-mode-3", "export-csv", "export-csv-2"])
      const [imported] = await server.db.query((sql) => sql`SELECT slug FROM posts WHERE id = 'p_dark_again'`)
      expect(imported).toEqual({ slug: "dark-mode-2" })
    } finally {
      await holder.end()
    }
  }, 60_000)
})

/** Every table of the schema (the migrator's own aside): its row count and a digest of its rows. */
const everyTable = async (url: string) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const tables = await client.query<{ name: string }>(
      "SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'effect_sql_migrations' ORDER BY 1"
    )
    const out: Record<string, { rows: number; digest: string }> = {}
    for (const { name } of tables.rows) {
      const { rows: [row] } = await client.query<{ rows: number; digest: string }>(
        `SELECT count(*)::int AS rows, md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) AS digest FROM "${name}" t`
      )
      out[name] = row!
    }
    return out
  } finally {
    await client.end()
  }
}

/** Posts whose slugs the import claims before its transaction: derived ones, numbered ones, explicit ones. */
const withClaims = (f: ReturnType<typeof full>) => {
  f.organizations[0]!.posts!.push(
    { id: "p_claim_1", boardId: "b_feat", title: "Keyboard shortcuts", content: "" },
    { id: "p_claim_2", boardId: "b_feat", title: "Keyboard shortcuts", content: "" },
    { id: "p_claim_3", boardId: "b_bugs", title: "Dark mode", content: "" },
    { id: "p_claim_4", boardId: "b_bugs", title: "Export", content: "", slug: "export-csv-4" }
  )
  return f
}

describe("a refused import leaves every table as it found it", () => {
  let seeded: TestDatabase
  beforeAll(async () => {
    seeded = await createDatabase()
  })
  afterAll(() => seeded?.drop())

  it("on an empty database: the schema is made, and every table stays empty", async () => {
    const empty = await createDatabase()
    try {
      const f = withClaims(full())
      f.organizations[0]!.posts!.push({ id: "p_dangling", boardId: "b_missing", title: "Dangling", content: "" })
      const result = await seed(f, "empty-refused.json", { DATABASE_URL: empty.url })
      expect(result.stderr.trim()).toBe('hearken: organizations[0].posts[7].boardId: no board "b_missing" in this organization')
      expect(result.code).toBe(1)
      const tables = await everyTable(empty.url)
      expect(Object.keys(tables)).toContain("slug_counters")
      expect(Object.entries(tables).filter(([, table]) => table.rows !== 0)).toEqual([])
    } finally {
      await empty.drop()
    }
  })

  const seededFile = () => {
    const f = full()
    f.organizations[1]!.posts = [{ id: "p_other", boardId: "b_other", title: "Elsewhere", content: "", slug: "taken-elsewhere" }]
    return f
  }

  it.each([
    ["a dangling boardId", (f: any) => { f.organizations[0].posts.push({ id: "p_x", boardId: "b_missing", title: "x", content: "" }) },
      'organizations[0].posts[7].boardId: no board "b_missing" in this organization'],
    ["a dangling statusId", (f: any) => { f.organizations[0].posts[5].statusId = "st_missing" },
      'organizations[0].posts[5].statusId: no status "st_missing" in this organization'],
    ["a post in an organization with no statuses", (f: any) => { f.organizations[2].posts = [{ id: "p_x", boardId: "b_nostatus", title: "x", content: "" }] },
      "organizations[2].posts[0].statusId: the organization has no statuses, so there is no default status to place the post in"],
    ["an explicit slug another post has", (f: any) => { f.organizations[0].posts[6].slug = "dark-mode" },
      'organizations[0].posts[6].slug: slug "dark-mode" is already used by another post'],
    ["an explicit slug twice in the file", (f: any) => { f.organizations[0].posts[5].slug = "export-csv-4" },
      'organizations[0].posts[6].slug: slug "export-csv-4" is already used by another post'],
    ["a post id of another organization", (f: any) => { f.organizations[0].posts[4].id = "p_other" },
      "organizations[0].posts[4].id: this id belongs to another organization"],
    ["an update id of another organization, at the very end", (f: any) => {
      f.organizations[1].updates = [{ id: "u_1", title: "Mine", slug: "mine", content: "" }]
    }, "organizations[1].updates[0].id: this id belongs to another organization"],
    ["one board id in two organizations of the file", (f: any) => {
      f.organizations[0].boards.push({ id: "b_twice", name: "Twice", slug: "twice", visibility: "public" })
      f.organizations[1].boards.push({ id: "b_twice", name: "Twice", slug: "twice", visibility: "public" })
    }, "organizations[1].boards[1].id: this id belongs to another organization"]
  ])("on a seeded database: %s", async (_, mutate, line) => {
    expect((await seed(seededFile(), "seeded.json", { DATABASE_URL: seeded.url })).code).toBe(0)
    const before = await everyTable(seeded.url)
    expect(before["slug_counters"]!.rows).toBeGreaterThan(0)
    const f = withClaims(seededFile())
    mutate(f)
    const result = await seed(f, "seeded-refused.json", { DATABASE_URL: seeded.url })
    expect(result.stderr.trim()).toBe(`hearken: ${line}`)
    expect(result.code).toBe(1)
    expect(await everyTable(seeded.url)).toEqual(before)
  })

  it("when another writer takes one of the file's ids after the checks, the claimed slugs are put back", async () => {
    expect((await seed(seededFile(), "seeded.json", { DATABASE_URL: seeded.url })).code).toBe(0)
    const f = withClaims(seededFile())
    ;(f.organizations[0]!.boards as Array<unknown>).push({ id: "b_race", name: "Race", slug: "race", visibility: "public" })
    const before = await everyTable(seeded.url)
    // Holds the organization's row, so the import's transaction waits at its first statement,
    // after its checks and its claims; meanwhile `b_race` goes to another organization.
    const holder = new pg.Client({ connectionString: seeded.url })
    await holder.connect()
    try {
      await holder.query("BEGIN")
      await holder.query("SELECT 1 FROM organizations WHERE id = 'org_acme' FOR UPDATE")
      const importing = seed(f, "race.json", { DATABASE_URL: seeded.url, DATABASE_STATEMENT_TIMEOUT_MS: "120000" })
      await eventually("the import to wait on the held organization row", () =>
        seeded.query((sql) => sql`SELECT 1 FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO organizations%'`)
          .then((rows) => rows.length === 1 ? true : undefined), { timeoutMs: 60_000 })
      // The claims are committed while the import waits (decision 0020).
      expect((await everyTable(seeded.url))["slug_counters"]).not.toEqual(before["slug_counters"])
      await holder.query("INSERT INTO boards (id, organization_id, name, slug, visibility) VALUES ('b_race', 'org_other', 'Theirs', 'theirs', 'public')")
      await holder.query("COMMIT")
      const result = await importing
      expect(result.stderr.trim()).toBe("hearken: organizations[0].boards[5].id: this id belongs to another organization")
      expect(result.code).toBe(1)
    } finally {
      await holder.end()
    }
    // The other writer's board, and the version it bumped, are all that changed.
    const after = await everyTable(seeded.url)
    expect({ ...after, boards: undefined, organization_versions: undefined })
      .toEqual({ ...before, boards: undefined, organization_versions: undefined })
    expect(after["boards"]!.rows).toBe(before["boards"]!.rows + 1)
  }, 90_000)
})
