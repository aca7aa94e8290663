import { Duration } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backgroundTtl } from "../packages/server/src/suggestions/Semantic.js"
import {
  calibrated,
  calibrationRows,
  type Draft,
  embeddingsEnv,
  fakeModel,
  suggestionIds,
  type TestModel,
  withModelFailing
} from "./support/calibration.js"
import {
  backgroundFixture,
  calibrationOrganization,
  duplicatePosts,
  floodedOrganization,
  floodPosts,
  nearPosts,
  sevenPosts,
  visitorCopy,
  visitorNearCopies
} from "./support/calibration-fixture.js"
import { widgetClient } from "./support/client.js"
import { createDatabase, type TestDatabase } from "./support/database.js"
import { type FakeEmbeddings, startFakeEmbeddings } from "./support/embeddings.js"
import { startServerOn, type TestServer, writeFixtureFile } from "./support/server.js"

/**
 * A board's background for suggestions by meaning (decisions 0023 and 0027)
 * that no visitor and no other organization can move, through HTTP on real
 * PostgreSQL with pgvector, with the two embedders that understand a
 * paraphrase: a small board with real duplicates among its posts still finds
 * a paraphrase; two identical posts by a visitor count once and leave a
 * paraphrase found; 50 identical posts on another organization's board
 * change nothing of this one's pool or answers.
 */

const embedders = ["concept", "glove"] as const
type Embedder = typeof embedders[number]

interface Running {
  readonly fake: FakeEmbeddings
  readonly db: TestDatabase
  readonly server: TestServer
  readonly model: TestModel
}
const running = new Map<Embedder, Running>()
const get = (embedder: Embedder) => running.get(embedder)!

beforeAll(async () => {
  const seed = await writeFixtureFile(backgroundFixture())
  // One at a time: a server's start-up is mostly CPU.
  for (const embedder of embedders) {
    const fake = await startFakeEmbeddings({ embedder })
    const model = fakeModel(embedder, fake)
    const db = await createDatabase()
    const server = await startServerOn(db, { SEED_FILE: seed, ...embeddingsEnv(fake, model) })
    running.set(embedder, { fake, db, model, server })
  }
  await Promise.all(embedders.map((e) => calibrated(get(e).db, get(e).model)))
}, 10 * 60_000) // GloVe's first fetch downloads 118 MB (`npm run fetch-glove`)
afterAll(async () => {
  for (const { db, fake, server } of running.values()) {
    await server.close()
    await fake.close()
    await db.drop()
  }
})

const suggest = (embedder: Embedder, boardId: string, draft: Draft) =>
  suggestionIds(get(embedder).server.api, calibrationOrganization, boardId, draft)

/** The answer without the semantic half: the model fails for the draft. */
const lexicalOnly = (embedder: Embedder, boardId: string, draft: Draft) =>
  withModelFailing(get(embedder).fake, () => suggest(embedder, boardId, draft))

/**
 * Waits until a background read at `readAt` (ms since the epoch) has left
 * the server's cache: the next answer is computed on the stored one.
 */
const backgroundExpired = (readAt: number) =>
  new Promise((r) => setTimeout(r, Math.max(0, readAt + Duration.toMillis(backgroundTtl) + 100 - Date.now())))

/** An anonymous visitor's post, word for word `visitorCopy` unless told. */
const postCopy = async (embedder: Embedder, organizationId: string, boardId: string, post = visitorCopy) => {
  const res = await widgetClient(get(embedder).server).feedback({
    organizationId,
    boardId,
    title: post.title,
    content: `<p>${post.text}</p>`
  })
  expect(res.status).toBe(200)
}

/** "Export invoices to PDF: Our accountant needs every invoice as a PDF file.", in no word of its own. */
const receipts: Draft = { title: "Receipts, Acrobat files" }
/** About a dark theme, in no word of the three posts that ask for one. */
const nightReading: Draft = { title: "Black background", content: "Easier to read at night" }
/** Neither in words nor in meaning a duplicate of any post below. */
const customDomain: Draft = { title: "Custom domain", content: "Serve the feedback board from our own domain." }

/**
 * `receipts` finds `found` on the board, before a visitor's `posts` there and
 * after (once the board is measured again and its background read anew), and
 * a draft with no duplicate finds nothing after: the board's row after.
 */
const paraphraseAround = async (
  embedder: Embedder,
  boardId: string,
  found: string,
  posts: ReadonlyArray<{ readonly title: string; readonly text: string }>
) => {
  const { db, model } = get(embedder)
  const readAt = Date.now()
  expect(await suggest(embedder, boardId, receipts)).toEqual([found])
  for (const post of posts) await postCopy(embedder, calibrationOrganization, boardId, post)
  const rows = await calibrated(db, model)
  await backgroundExpired(readAt)
  expect(await suggest(embedder, boardId, receipts)).toEqual([found])
  expect(await suggest(embedder, boardId, customDomain)).toEqual([])
  return rows.find((r) => r.boardId === boardId)!
}

// First: a draft's vector is cached for minutes, and a cached one answers even while the model fails.
describe("the drafts below", () => {
  it.each(embedders)("share no word with the posts they paraphrase (%s)", async (embedder) => {
    for (const boardId of ["b_dups", "b_seven", "b_near", "b_tiny"]) expect(await lexicalOnly(embedder, boardId, receipts), boardId).toEqual([])
    expect(await lexicalOnly(embedder, "b_dups", nightReading)).toEqual([])
  })
})

describe("a board of 9 posts, 3 of which ask for the same thing in their own words", () => {
  // Their distances to each other are a third of the board's: before, every draft's p was at least 3/9 there.
  it.each([
    ["concept", "p_dup_theme"],
    ["glove", "p_dup_dark"]
  ] as const)("finds a paraphrase of another post, and one of theirs, by meaning (%s)", async (embedder, darkTheme) => {
    const { db, model } = get(embedder)
    const row = (await calibrationRows(db, model)).find((r) => r.boardId === "b_dups")!
    expect(row.distances.length).toBe(duplicatePosts.length)
    expect(await suggest(embedder, "b_dups", receipts)).toEqual(["p_dup_pdf"])
    expect(await suggest(embedder, "b_dups", nightReading)).toEqual([darkTheme])
    // A draft with no duplicate there still gets nothing.
    expect(await suggest(embedder, "b_dups", customDomain)).toEqual([])
    expect(await suggest(embedder, "b_dups", { title: "Texting clients before events" })).toEqual([])
  })
})

describe("two identical posts by a visitor on a board of 7", () => {
  it.each(embedders)("count once, and the paraphrase found before is found after (%s)", async (embedder) => {
    const row = await paraphraseAround(embedder, "b_seven", "p_sev_pdf", [visitorCopy, visitorCopy])
    expect(row.posts).toBe(sevenPosts.length + 2)
    // One distance per text: the copies' distance to each other (0) is nowhere.
    expect(row.distances.length).toBe(sevenPosts.length + 1)
    expect(row.distances[0]).toBeGreaterThan(0.1)
  })
})

describe("five pairs of near-exact copies by a visitor on a board of 7", () => {
  // Before, each pair put two distances far under the board's median into its own: ten of seventeen, past half.
  it.each(embedders)("count once each, and the paraphrase found before is found after (%s)", async (embedder) => {
    const row = await paraphraseAround(embedder, "b_near", "p_near_pdf", visitorNearCopies.flat())
    expect(row.posts).toBe(nearPosts.length + 2 * visitorNearCopies.length)
    // One distance per pair, to a post with other words.
    expect(row.distances.length).toBe(nearPosts.length + visitorNearCopies.length)
    expect(row.distances[0]).toBeGreaterThan(0.1)
  })
})

// Last: before, the flood moved every organization's pool, and so the boards above.
describe("50 identical posts on another organization's public board", () => {
  it.each(embedders)("change neither this organization's pool nor its small boards' answers (%s)", async (embedder) => {
    const { db, model } = get(embedder)
    const readAt = Date.now()
    expect(await suggest(embedder, "b_tiny", receipts)).toEqual(["p_tiny_pdf"])
    const pool = (await calibrationRows(db, model, calibrationOrganization)).find((r) => r.boardId === "")!
    expect(pool.distances.length).toBe(50) // 25 quantiles of b_mixed and of b_notify
    for (let i = 0; i < 50; i++) await postCopy(embedder, floodedOrganization, "b_flood")
    const rows = await calibrated(db, model)
    await backgroundExpired(readAt)
    expect(await suggest(embedder, "b_tiny", receipts)).toEqual(["p_tiny_pdf"])
    expect(await suggest(embedder, "b_dups", receipts)).toEqual(["p_dup_pdf"])
    expect(await suggest(embedder, "b_tiny", customDomain)).toEqual([])
    const after = (await calibrationRows(db, model, calibrationOrganization)).find((r) => r.boardId === "")!
    expect([after.distances, after.computedMs]).toEqual([pool.distances, pool.computedMs])
    const flooded = rows.find((r) => r.boardId === "b_flood")!
    expect([flooded.organizationId, flooded.posts, flooded.distances.length]).toEqual([floodedOrganization, floodPosts.length + 50, floodPosts.length + 1])
    // The flooded organization's own pool has no board of 20 texts to be made of.
    expect(rows.find((r) => r.boardId === "" && r.organizationId === floodedOrganization)!.distances).toEqual([])
  })
})
