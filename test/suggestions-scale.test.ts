import { mkdtemp, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { baseFixture } from "./support/fixtures.js"
import { seedScript, spawnScript } from "./support/process.js"
import { ids, widgetClient } from "./support/client.js"
import { startSeededServer, useServer } from "./support/server.js"

/**
 * A word in 100 posts or more is too common to rank with (decision 0008):
 * the rare words of a draft carry the match, the first time and once the
 * common word is remembered. And a re-imported post that turned private or
 * moved to another board is found only where it now is.
 */
const fixture = baseFixture()
fixture.organizations[0]!.posts = [
  ...Array.from({ length: 150 }, (_, i) => ({
    id: `p_widget_${i}`,
    boardId: "b_feat",
    title: `Widget idea ${i}`,
    content: `<p>The widget could do thing number ${i}</p>`
  })),
  { id: "p_invoices", boardId: "b_feat", title: "Widget for invoices", content: "<p>Show unpaid invoices in the widget</p>" },
  { id: "p_roadmap", boardId: "b_feat", title: "Public roadmap page", content: "<p>A roadmap visitors can browse</p>" }
]

const server = useServer(() => startSeededServer(fixture))

const suggest = (title: string, boardId = "b_feat") =>
  widgetClient(server).suggest({ organizationId: "org_acme", boardId, title, content: "" })

const seed = async (file: unknown) => {
  const dir = await mkdtemp(join(tmpdir(), "hearken-reimport-"))
  await writeFile(join(dir, "fixture.json"), JSON.stringify(file))
  const seeding = spawnScript(seedScript, [join(dir, "fixture.json")], { DATABASE_URL: server.db.url, LOG_LEVEL: "error" })
  expect(await seeding.exited).toBe(0)
}

describe("suggestions on a board where a word is common", () => {
  it("ranks by the rare words, the first time and once the common word is remembered", async () => {
    for (let round = 0; round < 2; round++) {
      const res = await suggest("widget showing unpaid invoices")
      expect(res.status).toBe(200)
      expect(ids(res)).toEqual(["p_invoices"])
    }
  })

  it("says nothing when a draft shares only the common word", async () => {
    expect((await suggest("widget")).body).toEqual([])
  })

  it("follows a re-imported post: private, it is never found; moved, it is found on its new board only", async () => {
    expect(ids(await suggest("public roadmap for visitors"))).toEqual(["p_roadmap"])
    const moved = structuredClone(fixture)
    moved.organizations[0]!.posts = [{ id: "p_roadmap", boardId: "b_bugs", title: "Public roadmap page", content: "<p>A roadmap visitors can browse</p>" }]
    await seed(moved)
    expect(ids(await suggest("public roadmap for visitors"))).not.toContain("p_roadmap")
    expect(ids(await suggest("public roadmap for visitors", "b_bugs"))).toEqual(["p_roadmap"])
    const hidden = structuredClone(moved)
    hidden.organizations[0]!.posts = [{ ...moved.organizations[0]!.posts[0]!, visibility: "private" }]
    await seed(hidden)
    expect(ids(await suggest("public roadmap for visitors", "b_bugs"))).not.toContain("p_roadmap")
    const [row] = await server.db.query((sql) => sql`SELECT lexicon::text AS lexicon FROM posts WHERE id = 'p_roadmap'`)
    expect(row).toEqual({ lexicon: "" })
  })
})
