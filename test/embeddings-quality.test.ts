import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { datasetOrganization, type Draft, loadDataset } from "./support/dataset.ts"
import { calibrated } from "./support/calibration.js"
import { type FakeEmbeddings, startFakeEmbeddings } from "./support/embeddings.js"
import { ids, widgetClient } from "./support/client.js"
import { startSeededServer, type TestServer } from "./support/server.js"

/**
 * The merged answer (embeddings and words) on the labelled set, with the fake
 * concept embedder standing in for a model: the paraphrases the lexical path
 * cannot find are found, and the whole set holds what `npm run quality` measured.
 */
const dataset = loadDataset()
const draft = (id: string) => dataset.drafts.find((d) => d.id === id)!

let fake: FakeEmbeddings
let server: TestServer

beforeAll(async () => {
  fake = await startFakeEmbeddings({ dimensions: 64 })
  server = await startSeededServer({ organizations: [datasetOrganization(dataset)] }, {
    EMBEDDINGS_URL: fake.url,
    EMBEDDINGS_MODEL: "fake-concepts",
    EMBEDDINGS_DIMENSIONS: "64",
  })
  await calibrated(server.db, { name: "fake-concepts", dimensions: 64 }, 60_000)
}, 90_000)
afterAll(async () => {
  await server?.close()
  await fake?.close()
})

const suggest = (d: Pick<Draft, "boardId" | "title" | "content">) =>
  widgetClient(server).suggest({ organizationId: "org_quality", boardId: d.boardId, title: d.title, content: d.content }).then(ids)

describe("POST /suggestions on the labelled set, with embeddings", () => {
  // Paraphrases the lexical path misses (decision 0008): they share no word with their duplicate. Where the words
  // show nothing, the meaning's post comes first; where they show other posts (d021, d068: one shared common word,
  // decision 0031), it is fused with them, and a tie goes to the words.
  it.each([["d020", 0], ["d021", 1], ["d027", 0], ["d068", 1], ["d082", 1]] as const)("finds a paraphrase's duplicate (%s, at %i)", async (id, at) => {
    const d = draft(id)
    const ids = await suggest(d)
    expect(ids.indexOf(d.expected[0]!), JSON.stringify(ids)).toBe(at)
  })

  // Measured with the blend fitted on half of every labelled set (decision 0023); the lexical answer alone has 0.78 and 0.75.
  it("holds its measured quality over the whole set: recall@5 and MRR@5 at least 0.85, at most one result per draft with no duplicate", async () => {
    let recall = 0
    let reciprocal = 0
    let positives = 0
    let negativeResults = 0
    let negatives = 0
    for (const d of dataset.drafts) {
      const ids = await suggest(d)
      expect(ids.length).toBeLessThanOrEqual(5)
      if (d.expected.length === 0) {
        negatives++
        negativeResults += ids.length
        continue
      }
      positives++
      recall += d.expected.filter((id) => ids.includes(id)).length / d.expected.length
      const rank = ids.findIndex((id) => d.expected.includes(id))
      reciprocal += rank < 0 ? 0 : 1 / (rank + 1)
    }
    expect(recall / positives).toBeGreaterThanOrEqual(0.85)
    expect(reciprocal / positives).toBeGreaterThanOrEqual(0.85)
    expect(negativeResults / negatives).toBeLessThanOrEqual(1)
  })
})
