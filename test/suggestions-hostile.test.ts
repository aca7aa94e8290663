import { describe, expect, it } from "vitest"
import { postgresPoolSize } from "../packages/server/src/sql/Database.js"
import { permitsOf } from "../packages/server/src/suggestions/SuggestionQueries.js"
import { baseFixture, fixturePost } from "./support/fixtures.js"
import { getJson, type JsonResponse, widgetClient } from "./support/client.js"
import { startSeededServer, type TestServer, useServer } from "./support/server.js"
import { holding, waitingForLocks } from "./support/faults.js"
import { eventually } from "./support/wait.js"

const p = fixturePost

const fixture = baseFixture()
fixture.organizations[0]!.posts = [
  p("p_dark", "Dark mode", "<p>Please add a dark theme for the dashboard</p>"),
  p("p_export", "Export to CSV", "<p>Export all posts to a spreadsheet</p>"),
  // Enough posts sharing words that some features reach the common-feature cap (100).
  ...Array.from({ length: 150 }, (_, i) => p(`p_filler_${i}`, `Notification option ${i}`, `<p>notification sound option ${i}</p>`))
]

/** The longest content the API takes (20,000 code points), in four shapes a visitor could send. */
const letters = "abcdefghijklmnopqrstuvwxyz"
const shortWord = (i: number) => letters[i % 26]! + letters[Math.floor(i / 26) % 26]! + letters[Math.floor(i / 676) % 26]!
const hostile = {
  /** One word: longer than any word, it is no feature at all. */
  longWord: { title: "x", content: "a".repeat(20_000) },
  /** 5,000 distinct short words: every one a feature nobody has. */
  manyWords: { title: "zq xv", content: Array.from({ length: 5_000 }, (_, i) => shortWord(i)).join(" ").slice(0, 20_000) },
  /** tsquery's operators and quoting, around and inside words. */
  operators: {
    title: "!&|:*()<->'\\ dark:* & !mode | (x) <-> 'y' \\".repeat(4).slice(0, 200),
    content: "!&|:*()<->'\\ notification:* & !sound <2> 'a''b' \\\\ ".repeat(400).slice(0, 20_000)
  },
  /** A run of 20,000 Han characters, read as character pairs. */
  cjk: { title: "模式", content: Array.from({ length: 20_000 }, (_, i) => String.fromCodePoint(0x4e00 + ((i * 7919) % 20_000))).join("") }
}
const hostileDrafts = Object.values(hostile)

const suggest = (server: TestServer, draft: { title: string; content: string }) =>
  widgetClient(server).suggest({ organizationId: "org_acme", boardId: "b_feat", ...draft })

const expectSuggestions = (res: JsonResponse) => {
  expect(res.status).toBe(200)
  expect(Array.isArray(res.body)).toBe(true)
  expect(res.body.length).toBeLessThanOrEqual(5)
}

/** Tracks when each request settles, to compare orders. */
const tracked = <A>(promise: Promise<A>) => {
  const state = { settled: false, promise }
  promise.finally(() => (state.settled = true)).catch(() => undefined)
  return state
}

describe("hostile suggestion drafts", () => {
  // Generous limits here: these tests are about answers and fairness; the limits have their own below.
  const server = useServer(() =>
    startSeededServer(fixture, { DATABASE_STATEMENT_TIMEOUT_MS: "60000", SUGGESTIONS_STATEMENT_TIMEOUT_MS: "60000" })
  )

  it("answers 20 concurrent drafts of 20,000 characters (one word, distinct words, tsquery syntax, Han) with 200", async () => {
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => suggest(server, hostileDrafts[i % hostileDrafts.length]!)))
    for (const res of answers) expectSuggestions(res)
    // None of them shares a feature with a post, but the operators' `dark`, `mode` and `notification`.
    expect(answers.filter((_, i) => hostileDrafts[i % hostileDrafts.length] !== hostile.operators).map((res) => res.body))
      .toEqual(Array.from({ length: 15 }, () => []))
  })

  it("still finds the duplicate when a draft's body is one 20,000-letter word or operators", async () => {
    for (const content of [hostile.longWord.content, hostile.operators.content]) {
      const res = await suggest(server, { title: "Dark mode", content })
      expectSuggestions(res)
      expect(res.body[0]?.id).toBe("p_dark")
    }
  })

  it("keeps /health, /boards and /updates answering while suggestions hold their whole share of the pool", async () => {
    const share = permitsOf(postgresPoolSize)
    expect(share).toBeLessThan(postgresPoolSize)
    const suggestions = await holding(server, "posts", async () => {
      // Every suggestion now waits on the lock with a connection, or waits for its turn without one.
      // (A title with words: a draft with no feature at all is answered without a query.)
      const suggestions = Array.from({ length: 20 }, (_, i) =>
        tracked(suggest(server, { title: "Dark mode", content: hostileDrafts[i % hostileDrafts.length]!.content }))
      )
      await eventually(`${share} suggestions waiting on the lock`, async () => (await waitingForLocks(server)) >= share || undefined)
      // Health first: with no connection left it says 503 (its own 2 s limit), where the reads would wait for the lock.
      const health = await getJson(`${server.origin}/health`)
      expect(health).toMatchObject({ status: 200, body: { status: "ok" } })
      const [boards, updates] = await Promise.all([
        getJson(`${server.api}/boards?organizationId=org_acme`),
        getJson(`${server.api}/updates?organizationId=org_acme`)
      ])
      expect(boards.status).toBe(200)
      expect(boards.body.map((b: { id: string }) => b.id)).toContain("b_feat")
      expect(updates.status).toBe(200)
      // They answered before any suggestion did, and the suggestions never took more than their share.
      expect(suggestions.filter((s) => s.settled)).toHaveLength(0)
      expect(await waitingForLocks(server)).toBe(share)
      return suggestions
    })
    // Once the lock is gone, every one of them is answered.
    for (const res of await Promise.all(suggestions.map((s) => s.promise))) expectSuggestions(res)
  })
})

describe("statement timeout (DATABASE_STATEMENT_TIMEOUT_MS)", () => {
  const server = useServer(() => startSeededServer(fixture, { DATABASE_STATEMENT_TIMEOUT_MS: "1000" }))

  it("answers a clean 500 InternalServerError when a statement runs past it, and 200 once it no longer does", async () => {
    // Every answer of /boards and /updates reads the organization's version row first.
    await holding(server, "organization_versions", async () => {
      const [boards, updates, health] = await Promise.all([
        getJson(`${server.api}/boards?organizationId=org_acme`),
        getJson(`${server.api}/updates?organizationId=org_acme`),
        getJson(`${server.origin}/health`)
      ])
      for (const res of [boards, updates]) {
        expect(res.status).toBe(500)
        expect(res.body._tag).toBe("InternalServerError")
        expect(Object.keys(res.body).sort()).toEqual(["_tag", "message"])
        expect(res.body.message).not.toMatch(/statement|timeout|cancel|organization_versions|select/i)
      }
      expect(health.status).toBe(200)
    })
    expect((await getJson(`${server.api}/boards?organizationId=org_acme`)).status).toBe(200)
  })
})

describe("suggestion statement timeout (SUGGESTIONS_STATEMENT_TIMEOUT_MS)", () => {
  // The database's own limit is a minute: only the suggestions' limit can end the wait below within the test's time.
  const server = useServer(() =>
    startSeededServer(fixture, { DATABASE_STATEMENT_TIMEOUT_MS: "60000", SUGGESTIONS_STATEMENT_TIMEOUT_MS: "300" })
  )

  it("answers 200 [] for a suggestion whose lexical statement runs past it (decision 0039; test/suggestions-degrade.test.ts)", async () => {
    await holding(server, "posts", async () => {
      const res = await suggest(server, { title: "Dark mode", content: "" })
      expect(res.status).toBe(200)
      expect(res.body).toEqual([])
      // Cancelled, not abandoned: nothing of the server still waits on the lock.
      expect(await waitingForLocks(server)).toBe(0)
    })
    // The timed-out suggestion gave its connection and its turn back.
    const after = await suggest(server, { title: "Dark mode", content: "" })
    expectSuggestions(after)
    expect(after.body[0]?.id).toBe("p_dark")
  })
})
