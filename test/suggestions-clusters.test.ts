import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { calibrated, type Draft, embeddingsEnv, fakeModel, suggestionIds } from "./support/calibration.js"
import { ids as idsOf, widgetClient } from "./support/client.js"
import {
  boardPosts,
  type ClusterDraft,
  clusterDrafts,
  clusterRequest,
  clustersFixture,
  clustersOrganization,
  darkPosts,
  mixedPosts,
  repeatPosts,
  slugOf
} from "./support/clusters-fixture.js"
import { type FakeEmbeddings, startFakeEmbeddings } from "./support/embeddings.js"
import { freePort, type ServerProcess, spawnServer, waitForHealth } from "./support/process.js"
import { startSeededServer, type TestServer, writeFixtureFile } from "./support/server.js"
import { eventually } from "./support/wait.js"

/**
 * `POST /suggestions` ("up to five similar public posts", spec §4.1) on
 * boards where one request is asked several times in other words (issue 27):
 * seven posts close to a draft give five of them, three duplicates of one
 * another all three (to a draft in their words, and to one in others), and
 * a board of unrelated posts nothing. On PostgreSQL
 * and on the embedded database (PGlite), with words alone and with the fake
 * concept embedder; one server each, shared by the cases.
 */

type Database = "postgres" | "pglite"
type Matching = "lexical" | "concept"

interface Running {
  readonly api: string
  /** The concept embedder, when the server has one. */
  readonly fake: FakeEmbeddings | undefined
}

const combinations = [
  ["postgres", "lexical"],
  ["postgres", "concept"],
  ["pglite", "lexical"],
  ["pglite", "concept"]
] as const satisfies ReadonlyArray<readonly [Database, Matching]>

const key = (database: Database, matching: Matching) => `${database}/${matching}`

const running = new Map<string, Promise<Running>>()
const servers: Array<TestServer> = []
const processes: Array<ServerProcess> = []
const fakes: Array<FakeEmbeddings> = []

const concept = async () => {
  const fake = await startFakeEmbeddings({ embedder: "concept" })
  fakes.push(fake)
  return { fake, env: embeddingsEnv(fake, fakeModel("concept", fake)) }
}

/** Whether every post of the fixture reached the embedder. */
const allEmbedded = (fake: FakeEmbeddings) =>
  Object.values(boardPosts).every((list) => list.every((p) => fake.inputs.some((input) => input.startsWith(`${p.title}\n\n${p.text}`))))

/**
 * A draft per board that shares no word (nor title trigram, nor prefix) with
 * one of its posts, which the concept embedder finds by meaning once the
 * board is calibrated: how a server on PGlite, whose database the test cannot
 * read, shows it is ready.
 */
const probes: ReadonlyArray<readonly [string, Draft, string]> = [
  // "Nonprofit pricing: Charities on a tight budget would love a discount."
  ["b_dark", { title: "NGO coupon", content: "Lower price" }, "p_dko_nonprofit"],
  // "Nonprofit discount: Charities on a tight budget would love a cheaper plan."
  ["b_repeat", { title: "NGO coupon" }, "p_rpo_nonprofit"],
  // "Two-factor authentication: Require an authenticator app code when admins sign in."
  ["b_mixed", { title: "TOTP login" }, "p_mix_2fa"]
]

const probe = (api: string) => Promise.all(probes.map(([boardId, draft]) => suggestionIds(api, clustersOrganization, boardId, draft)))

beforeAll(async () => {
  const seed = await writeFixtureFile(clustersFixture())
  const rateLimits = { LOG_LEVEL: "error", RATE_LIMIT_MULTIPLIER: "1000" }
  // The embedded databases first, as processes of their own: their migrations take the longest.
  for (const matching of ["lexical", "concept"] as const) {
    running.set(key("pglite", matching), (async () => {
      const embeddings = matching === "concept" ? await concept() : undefined
      const server = spawnServer({ PGLITE_DIR: "memory", SEED_FILE: seed, ...rateLimits, ...embeddings?.env }, await freePort())
      processes.push(server)
      await waitForHealth(server.origin, 60_000)
      const api = `${server.origin}/api/widget/v1`
      if (embeddings !== undefined) {
        const fake = embeddings.fake
        await eventually("every post embedded", async () => allEmbedded(fake) || undefined, { timeoutMs: 60_000, everyMs: 100 })
        // Its database takes the server's one connection: the calibration shows in the answers. Once every
        // board's probe is found, every board is calibrated; a few more sweeps (200 ms) for the pool.
        await eventually("every board's probe found by meaning", async () => {
          const answers = await probe(api)
          return probes.every(([, , expected], i) => answers[i]![0] === expected) || undefined
        }, { timeoutMs: 60_000, everyMs: 200 })
        await new Promise((r) => setTimeout(r, 1_000))
      }
      return { api, fake: embeddings?.fake }
    })())
  }
  // One at a time: a server's start-up is mostly CPU.
  const lexical = await startSeededServer(clustersFixture())
  servers.push(lexical)
  running.set(key("postgres", "lexical"), Promise.resolve({ api: lexical.api, fake: undefined }))
  const { fake, env } = await concept()
  const withMeaning = await startSeededServer(clustersFixture(), env)
  servers.push(withMeaning)
  await calibrated(withMeaning.db, fakeModel("concept", fake))
  running.set(key("postgres", "concept"), Promise.resolve({ api: withMeaning.api, fake }))
  await Promise.all(running.values())
}, 120_000)

afterAll(async () => {
  for (const server of processes) {
    if (server.child.exitCode === null) {
      server.child.kill("SIGTERM")
      await server.exited
    }
  }
  for (const server of servers) await server.close()
  for (const fake of fakes) await fake.close()
})

const ask = async (database: Database, matching: Matching, draft: ClusterDraft) => {
  const { api } = await running.get(key(database, matching))!
  return widgetClient(new URL(api).origin).suggest(clusterRequest(draft))
}

/** A post as `POST /suggestions` answers it: exactly the spec's fields (§4.1, the Suggestion match object). */
const match = (boardId: string, id: string) => {
  const post = boardPosts[boardId]!.find((p) => p.id === id)
  if (post === undefined) throw new Error(`${id} is not a post of ${boardId}`)
  return { id, title: post.title, excerpt: post.text, slug: slugOf(id) }
}


const darkIds = darkPosts.map((p) => p.id)
const repeatIds = repeatPosts.map((p) => p.id)

describe.each(combinations)("POST /suggestions on boards asking one thing several times (%s, %s)", (database, matching) => {
  // Four of the seven share only "dark" with the draft: the words show the three that share more, the meaning all five.
  it(matching === "concept"
    ? "answers 5 of the 7 posts close to a draft, and nothing else"
    : "answers the 3 of the 7 posts that share the draft's words, and nothing else", async () => {
    const res = await ask(database, matching, clusterDrafts.dark)
    expect(res.status).toBe(200)
    const ids = idsOf(res)
    expect(ids, JSON.stringify(ids)).toHaveLength(matching === "concept" ? 5 : 3)
    expect(new Set(ids).size).toBe(ids.length)
    for (const id of ids) expect(darkIds, `${id} is not one of the seven`).toContain(id)
    if (matching === "lexical") expect([...ids].sort()).toEqual(["p_dark_black", "p_dark_oled", "p_dark_theme"])
    expect(res.body).toEqual(ids.map((id) => match("b_dark", id)))
  })

  it.each([
    ["in their words", clusterDrafts.repeatTheirWords],
    ["in other words", clusterDrafts.repeatOtherWords]
  ] as const)("answers all 3 duplicates of one another, and nothing else, to a draft %s", async (_, draft) => {
    const res = await ask(database, matching, draft)
    expect(res.status).toBe(200)
    const ids = idsOf(res)
    expect([...ids].sort(), JSON.stringify(ids)).toEqual([...repeatIds].sort())
    expect(res.body).toEqual(ids.map((id) => match("b_repeat", id)))
  })

  it("answers [] on a board of 25 unrelated posts to a draft none of them is about", async () => {
    expect(mixedPosts).toHaveLength(25)
    const res = await ask(database, matching, clusterDrafts.unrelated)
    expect(res).toMatchObject({ status: 200, body: [] })
  })

  // The control for the waits above: with the concept embedder the server really answers by meaning.
  it(`finds the readiness probes ${matching === "concept" ? "by meaning" : "nowhere: they share no word with their posts"}`, async () => {
    const { api } = await running.get(key(database, matching))!
    expect(await probe(api)).toEqual(probes.map(([, , expected]) => matching === "concept" ? [expected] : []))
  })
})
