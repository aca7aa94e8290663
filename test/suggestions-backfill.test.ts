import { mkdtemp, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { widgetClient } from "./support/client.js"
import { baseFixture } from "./support/fixtures.js"
import { createDatabase, databaseEnv } from "./support/database.js"
import { freePort, spawnServer, waitForHealth } from "./support/process.js"
import { eventually } from "./support/wait.js"

const db = await createDatabase()
afterAll(() => db.drop())

describe("the suggestion index of posts written before it existed", () => {
  it("is back-filled in the background after start-up", async () => {
    const fixture = baseFixture()
    fixture.organizations[0]!.posts = [
      ...Array.from({ length: 1_200 }, (_, i) => ({
        id: `p_${i}`,
        boardId: "b_feat",
        title: i === 777 ? "Export invoices to CSV" : `Unrelated request number ${i}`,
        content: i === 777 ? "<p>Our accountant needs a spreadsheet of invoices</p>" : "<p>something else entirely</p>"
      })),
      { id: "p_private", boardId: "b_feat", title: "Export invoices to CSV, privately", content: "<p>invoices</p>", visibility: "private" }
    ]
    const dir = await mkdtemp(join(tmpdir(), "hearken-backfill-"))
    await writeFile(join(dir, "fixture.json"), JSON.stringify(fixture))
    const env = { ...databaseEnv(db.url), LOG_LEVEL: "error", RATE_LIMIT_MULTIPLIER: "1000" }
    const suggest = (origin: string) =>
      widgetClient(origin).suggest({
        organizationId: "org_acme", boardId: "b_feat", title: "CSV export of invoices", content: ""
      })

    const first = spawnServer({ ...env, SEED_FILE: join(dir, "fixture.json") }, await freePort())
    await waitForHealth(first.origin)
    expect((await suggest(first.origin)).body.map((m: { id: string }) => m.id)).toEqual(["p_777"])
    first.child.kill("SIGTERM")
    expect(await first.exited).toBe(0)

    // As a database from before the lexicon would look.
    await db.query((sql) => sql`UPDATE posts SET lexicon = NULL, title_lexicon = NULL`)
    const second = spawnServer(env, await freePort())
    await waitForHealth(second.origin)
    await eventually("the back-fill to finish", async () => {
      const [row] = await db.query((sql) => sql`SELECT count(*)::int AS missing FROM posts WHERE lexicon IS NULL`)
      return row!["missing"] === 0 || undefined
    }, { everyMs: 100 })
    expect((await suggest(second.origin)).body.map((m: { id: string }) => m.id)).toEqual(["p_777"])
    // Private posts get an empty lexicon: back-filled, never found.
    const privateRows = await db.query((sql) =>
      sql`SELECT lexicon::text AS lexicon, title_lexicon::text AS "titleLexicon" FROM posts WHERE visibility = 'private'`
    )
    expect(privateRows).toEqual([{ lexicon: "", titleLexicon: "" }])
    second.child.kill("SIGTERM")
    expect(await second.exited).toBe(0)
  }, 60_000)
})
