import { afterAll, beforeAll, describe, expect, it } from "vitest"
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
import { calibrationFixture, calibrationOrganization, publicPosts } from "./support/calibration-fixture.js"
import { type Embedder, type FakeEmbeddings, startFakeEmbeddings } from "./support/embeddings.js"
import { createDatabase, type TestDatabase } from "./support/database.js"
import { freePort, type ServerProcess, spawnServer, waitForHealth } from "./support/process.js"
import { postJson, startServerOn, type TestServer, writeFixtureFile } from "./support/server.js"
import { eventually } from "./support/wait.js"

/**
 * The semantic half's per-board calibration (decision 0023), through HTTP on
 * real PostgreSQL with pgvector, with each of the fake's embedders: a draft
 * with no duplicate gets nothing on a board of unrelated posts and on a
 * board of one topic; a paraphrase sharing no word with its original is
 * found by meaning; the `embedding_calibrations` rows follow the boards (new
 * posts, private posts, another model); a 3-post board borrows its
 * organization's pool without flooding; and the same on the embedded
 * database (PGlite).
 */

const embedders = ["concept", "glove", "ngram"] as const

interface Running {
  readonly fake: FakeEmbeddings
  /** The server's database, which outlives it (dropped after the tests). */
  readonly db: TestDatabase
  server: TestServer
  model: TestModel
}
const running = new Map<Embedder, Running>()
const get = (embedder: Embedder) => running.get(embedder)!

/** The server on PGlite: a process of its own, started first (its migrations take the longest). */
let embedded: Promise<{ readonly fake: FakeEmbeddings; readonly server: ServerProcess }> | undefined

beforeAll(async () => {
  const seed = await writeFixtureFile(calibrationFixture())
  embedded = (async () => {
    const fake = await startFakeEmbeddings({ embedder: "concept" })
    const server = spawnServer({ PGLITE_DIR: "memory", SEED_FILE: seed, LOG_LEVEL: "error", RATE_LIMIT_MULTIPLIER: "1000", ...embeddingsEnv(fake, fakeModel("concept", fake)) },
      await freePort())
    return { fake, server }
  })()
  // One at a time: a server's start-up is mostly CPU.
  for (const embedder of embedders) {
    const fake = await startFakeEmbeddings({ embedder })
    const model = fakeModel(embedder, fake)
    const db = await createDatabase()
    running.set(embedder, { fake, db, model, server: await startServerOn(db, { SEED_FILE: seed, ...embeddingsEnv(fake, model) }) })
  }
  await Promise.all(embedders.map((e) => calibrated(get(e).server.db, get(e).model)))
}, 10 * 60_000) // GloVe's first fetch downloads 118 MB (`npm run fetch-glove`)
afterAll(async () => {
  const pglite = await embedded
  if (pglite !== undefined) {
    if (pglite.server.child.exitCode === null) {
      pglite.server.child.kill("SIGTERM")
      await pglite.server.exited
    }
    await pglite.fake.close()
  }
  for (const { fake, db, server } of running.values()) {
    await server.close()
    await fake.close()
    await db.drop()
  }
})

const suggestAt = (api: string, boardId: string, draft: Draft) => suggestionIds(api, calibrationOrganization, boardId, draft)
const suggest = (embedder: Embedder, boardId: string, draft: Draft) => suggestAt(get(embedder).server.api, boardId, draft)

/** Drafts with no duplicate on their board (and none in words: the lexical half finds nothing either). */
const unrelated = {
  b_mixed: [
    { title: "Show a changelog inside the product", content: "Tell customers what shipped this week." },
    { title: "Custom domain", content: "Serve the feedback board from our own domain." }
  ],
  b_notify: [
    { title: "Trial ending soon", content: "A heads-up a few days before the subscription expires." },
    { title: "Churn warning", content: "Ping the account owner when a customer cancels." }
  ]
} as const satisfies Record<string, ReadonlyArray<Draft>>

/**
 * Drafts with no duplicate that the lexical half answers anyway (when this
 * was written: "Offline mode for the iPhone app" for its "for the"; five
 * posts whose titles have "notify/notification … when"): the meaning adds
 * nothing to them.
 */
const wordy = {
  b_mixed: { title: "Custom domain for the portal", content: "Serve the feedback board from our own domain." },
  b_notify: { title: "Notification when a payment fails", content: "Alert billing admins if a card is declined." }
} as const satisfies Record<string, Draft>

/** The answer without the semantic half: the model fails for the draft. */
const lexicalOnly = (embedder: Embedder, boardId: string, draft: Draft) =>
  withModelFailing(get(embedder).fake, () => suggest(embedder, boardId, draft))

/** Shares no word (nor title trigram, nor prefix) with "Dark mode: Please offer a dark colour scheme; …". */
const nightReading: Draft = { title: "Black background", content: "Easier to read at night" }

describe("a draft with no duplicate gets nothing", () => {
  it.each(embedders)("on a board of 25 unrelated posts (%s)", async (embedder) => {
    for (const draft of unrelated.b_mixed) expect(await suggest(embedder, "b_mixed", draft), draft.title).toEqual([])
    const lexical = await lexicalOnly(embedder, "b_mixed", wordy.b_mixed)
    expect(await suggest(embedder, "b_mixed", wordy.b_mixed)).toEqual(lexical)
    // The same server finds a post asked again in the same words: the empty answers above are not an empty board.
    expect(await suggest(embedder, "b_mixed", { title: "Gantt chart view", content: "Show projects on a timeline with the dependencies between tasks." }))
      .toEqual(["p_mix_gantt"])
  })

  it.each(embedders)("on a board of 25 requests about notifications (%s)", async (embedder) => {
    for (const draft of unrelated.b_notify) expect(await suggest(embedder, "b_notify", draft), draft.title).toEqual([])
    const lexical = await lexicalOnly(embedder, "b_notify", wordy.b_notify)
    expect(await suggest(embedder, "b_notify", wordy.b_notify)).toEqual(lexical)
    expect(await suggest(embedder, "b_notify", { title: "Quiet hours", content: "Hold notifications between 10 pm and 7 am in my time zone." }))
      .toEqual(["p_ntf_quiet"])
  })
})

describe("a paraphrase that shares no word with its duplicate", () => {
  it.each([
    ["concept", ["p_mix_dark"]],
    ["glove", ["p_mix_dark"]],
    // Character n-grams know spelling, not meaning.
    ["ngram", []]
  ] as const)("is found by meaning alone, and by nothing else (%s)", async (embedder, expected) => {
    // Without the model, the words find nothing.
    expect(await lexicalOnly(embedder, "b_mixed", nightReading)).toEqual([])
    expect(await suggest(embedder, "b_mixed", nightReading)).toEqual(expected)
  })
})

describe("a board of 3 posts, which borrows its organization's pool", () => {
  it.each(embedders)("finds a lexically obvious duplicate alone and gives an unrelated draft nothing (%s)", async (embedder) => {
    expect(await suggest(embedder, "b_tiny", { title: "Export invoices as PDF" })).toEqual(["p_tiny_pdf"])
    expect(await suggest(embedder, "b_tiny", { title: "Invite a guest", content: "Let clients follow a project." })).toEqual(["p_tiny_guests"])
    expect(await suggest(embedder, "b_tiny", { title: "Calendar view of due dates" })).toEqual([])
    expect(await suggest(embedder, "b_tiny", { title: "Dark mode", content: "Please offer a dark colour scheme." })).toEqual([])
  })

  // With 3 distances of its own, a p-value under 0.2 needs the pool: this is found through the pool.
  it.each([
    ["concept", ["p_tiny_pdf"]],
    ["glove", ["p_tiny_pdf"]],
    ["ngram", []]
  ] as const)("finds a paraphrase by meaning, against the pool (%s)", async (embedder, expected) => {
    // "Export invoices to PDF: Our accountant needs every invoice as a PDF file."; "files" is not "file" to the words.
    const draft = { title: "Receipts, Acrobat files" }
    expect(await lexicalOnly(embedder, "b_tiny", draft)).toEqual([])
    expect(await suggest(embedder, "b_tiny", draft)).toEqual(expected)
  })
})

describe("the calibration rows", () => {
  it.each(embedders)("hold each public board's nearest-neighbour distances, and the pool (%s)", async (embedder) => {
    const { server, model } = get(embedder)
    const rows = await calibrationRows(server.db, model)
    // Public posts only, public boards only: b_mixed's 2 private posts and the private board b_hidden count nowhere.
    expect(rows.map((r) => [r.boardId, r.posts, r.distances.length])).toEqual([
      ["", 0, 50], // 25 quantiles of each board with 20 distances or more: b_mixed and b_notify
      ["b_mixed", publicPosts["b_mixed"], 25],
      ["b_notify", publicPosts["b_notify"], 25],
      ["b_tiny", publicPosts["b_tiny"], 3]
    ])
    // Each board's distances are its posts' distances to their nearest neighbour (every post is sampled under 200).
    const exact = await server.db.query<{ boardId: string; distances: ReadonlyArray<number> }>((sql) =>
      sql`WITH v AS (
          SELECT p.board_id, p.id, e.embedding AS v FROM post_embeddings e
          JOIN posts p ON p.id = e.post_id AND p.visibility = 'public'
          JOIN boards b ON b.id = p.board_id AND b.visibility = 'public'
          WHERE e.model = ${model.name} AND e.dimensions = ${model.dimensions}
        )
        SELECT a.board_id AS "boardId", array_agg((SELECT min(a.v <=> o.v) FROM v o WHERE o.board_id = a.board_id AND o.id <> a.id)::float8 ORDER BY 1) AS distances
        FROM v a GROUP BY a.board_id ORDER BY a.board_id`
    )
    for (const { boardId, distances } of exact) {
      const stored = rows.find((r) => r.boardId === boardId)!.distances
      expect(stored.length, boardId).toBe(distances.length)
      distances.map(Number).sort((a, b) => a - b).forEach((d, i) => expect(stored[i]!, `${boardId}[${i}]`).toBeCloseTo(d, 6))
    }
    const embeddedPrivate = await server.db.query((sql) =>
      sql`SELECT p.id FROM post_embeddings e JOIN posts p ON p.id = e.post_id WHERE p.visibility = 'private'`
    )
    expect(embeddedPrivate).toEqual([])
  })
})

// In order: each test changes the concept server's boards (or the server) for the next.
describe("the calibration follows the boards (concept)", () => {
  it("never suggests a private post, even to a draft identical to it", async () => {
    expect(await suggest("concept", "b_mixed", { title: "Trello import", content: "Bring our boards, cards and labels over from Trello." }))
      .toEqual([])
    // The public post it resembles, not the private one.
    expect(await suggest("concept", "b_mixed", {
      title: "Export invoices to CSV for the auditors",
      content: "The auditors want every invoice as a spreadsheet, privately."
    })).toEqual(["p_mix_csv"])
  })

  /** Shares no word with the post below; about it in meaning (the concept model's SMS, customer and event). */
  const texting: Draft = { title: "Texting clients before events" }
  let created: string

  it("counts a new post, and finds it", async () => {
    const { server, model } = get("concept")
    const before = (await calibrationRows(server.db, model)).find((r) => r.boardId === "b_mixed")!
    expect(await suggest("concept", "b_mixed", texting)).toEqual([])
    const res = await postJson(`${server.api}/feedback`, {
      organizationId: calibrationOrganization,
      boardId: "b_mixed",
      title: "SMS reminders",
      content: "<p>Send a text message to each customer on the eve of their appointment.</p>"
    })
    expect(res.status).toBe(200)
    created = res.body.id
    const rows = await calibrated(server.db, model)
    const after = rows.find((r) => r.boardId === "b_mixed")!
    expect([after.posts, after.distances.length]).toEqual([publicPosts["b_mixed"]! + 1, publicPosts["b_mixed"]! + 1])
    expect(after.newest).not.toBe(before.newest)
    expect(after.computedMs).toBeGreaterThan(before.computedMs)
    // The other boards did not change: their rows were not computed again.
    for (const boardId of ["b_notify", "b_tiny"]) {
      expect(rows.find((r) => r.boardId === boardId)!.computedMs).toBeLessThan(after.computedMs)
    }
    expect(await suggest("concept", "b_mixed", texting)).toEqual([created])
  })

  it("calibrates another model on the same database, and answers with it", async () => {
    const current = get("concept")
    const oldModel = current.model
    await current.server.close() // the database stays
    const model = fakeModel("concept", current.fake, "-2")
    current.server = await startServerOn(current.db, embeddingsEnv(current.fake, model))
    current.model = model
    const rows = await calibrated(current.server.db, model)
    expect(rows.map((r) => [r.boardId, r.posts, r.distances.length])).toEqual([
      ["", 0, 50],
      ["b_mixed", publicPosts["b_mixed"]! + 1, publicPosts["b_mixed"]! + 1],
      ["b_notify", publicPosts["b_notify"], 25],
      ["b_tiny", publicPosts["b_tiny"], 3]
    ])
    // The first model's rows stay as they were (it may be configured again).
    expect((await calibrationRows(current.server.db, oldModel)).map((r) => [r.boardId, r.posts])).toEqual([
      ["", 0],
      ["b_mixed", publicPosts["b_mixed"]! + 1],
      ["b_notify", publicPosts["b_notify"]],
      ["b_tiny", publicPosts["b_tiny"]]
    ])
    expect(current.fake.model).toBe(model.name)
    expect(await suggest("concept", "b_mixed", texting)).toEqual([created])
    for (const draft of unrelated.b_mixed) expect(await suggest("concept", "b_mixed", draft), draft.title).toEqual([])
  })

  it("drops a post made private, and the row of a board made private (imported again)", async () => {
    const current = get("concept")
    const gantt = { title: "Gantt chart view", content: "Show projects on a timeline with the dependencies between tasks." }
    expect(await suggest("concept", "b_mixed", gantt)).toEqual(["p_mix_gantt"])
    const fixture = calibrationFixture()
    const [organization] = fixture.organizations
    organization!.posts = organization!.posts.map((p) => p.id === "p_mix_gantt" ? { ...p, visibility: "private" } : p)
    organization!.boards = organization!.boards.map((b) => b.id === "b_tiny" ? { ...b, visibility: "private" } : b)
    await current.server.close()
    current.server = await startServerOn(current.db, { SEED_FILE: await writeFixtureFile(fixture), ...embeddingsEnv(current.fake, current.model) })
    const rows = await calibrated(current.server.db, current.model)
    expect(rows.map((r) => [r.boardId, r.posts, r.distances.length])).toEqual([
      ["", 0, 50],
      ["b_mixed", publicPosts["b_mixed"]!, publicPosts["b_mixed"]!], // one new, one made private
      ["b_notify", publicPosts["b_notify"], 25]
    ])
    expect(await suggest("concept", "b_mixed", gantt)).toEqual([])
    expect(await suggest("concept", "b_mixed", texting)).toEqual([created])
  })
})

describe("on the embedded database (PGlite), with the concept embedder", () => {
  let api: string

  beforeAll(async () => {
    const { server } = (await embedded)!
    api = `${server.origin}/api/widget/v1`
    await waitForHealth(server.origin, 60_000)
    // Its database takes one connection, the server's: the calibration shows in the answers. Once the
    // paraphrase is found, b_mixed is calibrated; a few more sweeps (200 ms), and every board is.
    await eventually("the paraphrase found", async () =>
      (await suggestAt(api, "b_mixed", nightReading))[0] === "p_mix_dark" || undefined, { timeoutMs: 60_000, everyMs: 200 })
    await new Promise((r) => setTimeout(r, 1_000))
  }, 90_000)

  it("gives a draft with no duplicate nothing, on either board", async () => {
    for (const [boardId, drafts] of Object.entries(unrelated)) {
      for (const draft of drafts) expect(await suggestAt(api, boardId, draft), draft.title).toEqual([])
    }
    expect(await suggestAt(api, "b_tiny", { title: "Calendar view of due dates" })).toEqual([])
  })

  it("finds a paraphrase by meaning, on a board of 25 and on one of 3 (against the pool), and a lexical duplicate alone", async () => {
    expect(await suggestAt(api, "b_mixed", nightReading)).toEqual(["p_mix_dark"])
    expect(await suggestAt(api, "b_tiny", { title: "Export invoices as PDF" })).toEqual(["p_tiny_pdf"])
    expect(await suggestAt(api, "b_tiny", { title: "Receipts, Acrobat files" })).toEqual(["p_tiny_pdf"])
  })
})
