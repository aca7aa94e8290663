import { describe, expect, it } from "vitest"
import { datasetOrganization, type Draft, loadDataset } from "./support/dataset.ts"
import { widgetClient } from "./support/client.js"
import { startSeededServer, useServer } from "./support/server.js"

/**
 * Suggestions on the labelled set (`bench/suggestions/dataset.json`, 432
 * posts in six languages), through HTTP on real PostgreSQL: one draft of each
 * kind finds its duplicate first, and drafts with no duplicate get nothing.
 * `npm run quality` reports the whole set.
 */
const dataset = loadDataset()
const draft = (id: string) => dataset.drafts.find((d) => d.id === id)!

const server = useServer(() =>
  startSeededServer({
    organizations: [datasetOrganization(dataset), {
      id: "org_elsewhere",
      name: "Elsewhere",
      statuses: [{ id: "st_elsewhere", name: "Open" }],
      boards: [{ id: "b_elsewhere", name: "Board", slug: "board", visibility: "public" }],
      // The same text as a labelled post, in another organization: never suggested to org_quality.
      posts: [{ ...dataset.posts[0]!, id: "q_elsewhere", boardId: "b_elsewhere" }]
    }]
  })
)

const suggest = (d: Pick<Draft, "boardId" | "title" | "content">, organizationId = "org_quality") =>
  widgetClient(server).suggest({ organizationId, boardId: d.boardId, title: d.title, content: d.content })

describe("POST /suggestions on the labelled set", () => {
  it.each([
    ["word_order", "d001"],
    ["paraphrase", "d003"],
    ["typo", "d005"],
    ["morphology", "d007"],
    ["abbreviation", "d013"],
    ["german_compound", "d018"],
    ["french_spanish", "d026"],
    ["cjk (Chinese)", "d015"],
    ["cjk (Japanese)", "d047"],
    ["old_duplicate", "d041"],
    ["look_alike", "d061"]
  ])("finds the duplicate first: %s (%s)", async (_kind, id) => {
    const d = draft(id)
    const res = await suggest(d)
    expect(res.status).toBe(200)
    expect(res.body.length).toBeLessThanOrEqual(5)
    expect(res.body[0]?.id).toBe(d.expected[0])
  })

  it.each(["d012", "d033", "d053", "d070", "d099", "d100"])("answers [] to a draft with no duplicate (%s)", async (id) => {
    const res = await suggest(draft(id))
    expect(res).toMatchObject({ status: 200, body: [] })
  })

  it("reads a 20,000-character draft only as far as it needs: the same answer as the draft alone", async () => {
    const d = draft("d007")
    const filler = " Lorem ipsum dolor sit amet, consectetur adipiscing elit."
    const long = { ...d, content: (d.content + filler.repeat(400)).slice(0, 20_000) }
    expect(Array.from(long.content)).toHaveLength(20_000)
    const res = await suggest(long)
    expect(res.status).toBe(200)
    expect(res.body[0]?.id).toBe(d.expected[0])
  })

  it("never suggests another organization's post, even one with the same text", async () => {
    const post = dataset.posts[0]!
    const res = await suggest({ boardId: post["boardId"]!, title: post["title"]!, content: "" })
    expect(res.body.map((m: { id: string }) => m.id)).not.toContain("q_elsewhere")
    const other = await suggest({ boardId: "b_elsewhere", title: post["title"]!, content: "" }, "org_elsewhere")
    expect(other.body.map((m: { id: string }) => m.id)).toEqual(["q_elsewhere"])
  })

  // Measured 0.78 and 0.88 with the selection fitted on half of every labelled set (decision 0023).
  it("holds its measured quality over the whole set: recall@5 at least 0.75, at most one result per draft with no duplicate", async () => {
    let found = 0
    let positives = 0
    let negativeResults = 0
    let negatives = 0
    for (const d of dataset.drafts) {
      const res = await suggest(d)
      expect(res.status).toBe(200)
      const ids = (res.body as Array<{ id: string }>).map((m) => m.id)
      if (d.expected.length === 0) {
        negatives++
        negativeResults += ids.length
      } else {
        positives++
        if (d.expected.some((id) => ids.includes(id))) found++
      }
    }
    expect(found / positives).toBeGreaterThanOrEqual(0.75)
    expect(negativeResults / negatives).toBeLessThanOrEqual(1)
  })
})
