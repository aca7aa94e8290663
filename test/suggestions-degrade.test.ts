import { describe, expect, it } from "@effect/vitest"
import { Effect, Logger } from "effect"
import { TestClock } from "effect/testing"
import { afterAll, beforeAll } from "vitest"
import { gaveWayLog } from "../packages/server/dist/suggestions/SuggestionQueries.js"
import { startFakeEmbeddings } from "./support/embeddings.js"
import { holdLock } from "./support/faults.js"
import { baseFixture, fixturePost } from "./support/fixtures.js"
import { freePort } from "./support/net.js"
import type { ServerProcess } from "./support/process.js"
import { postJson, useServerProcesses } from "./support/server.js"
import { eventually } from "./support/wait.js"

/**
 * Decision 0039: a suggestion statement past SUGGESTIONS_STATEMENT_TIMEOUT_MS
 * gives way to the cheaper half of the answer, never a 5xx: the semantic
 * half's → the lexical answer alone; the lexical half's → `[]`. Each is
 * counted in `hearken_suggestions_degraded_total{to}` and logged at most once
 * a minute. A held table lock makes a statement run past the timeout, on the
 * real server, PostgreSQL and embeddings API (a fake one).
 */

const fake = await startFakeEmbeddings({ dimensions: 16 })

const fixture = baseFixture()
fixture.organizations[0]!.posts = [
  fixturePost("p_dark", "Dark mode", "<p>Please add a dark theme for the dashboard</p>"),
  fixturePost("p_export", "Export to CSV", "<p>Export all posts to a spreadsheet</p>")
]

const gaveWayLine = /Suggestions gave way/

describe("a suggestion statement past its timeout, on the server", () => {
  let metricsPort = 0
  const group = useServerProcesses(fixture)
  let server: ServerProcess
  beforeAll(async () => {
    metricsPort = await freePort()
    server = await group.processes.start({
      EMBEDDINGS_URL: fake.url,
      EMBEDDINGS_DIMENSIONS: "16",
      METRICS_PORT: String(metricsPort),
      // The database's own limit is a minute: only the suggestions' limit ends the waits below.
      DATABASE_STATEMENT_TIMEOUT_MS: "60000",
      SUGGESTIONS_STATEMENT_TIMEOUT_MS: "300"
    })
    // Both posts embedded: the semantic half has something to search.
    await eventually("both posts embedded", async () =>
      (await group.db.query<{ n: number }>((sql) => sql`SELECT count(*)::int AS n FROM post_embeddings`))[0]!.n === 2 || undefined)
  })
  afterAll(() => fake.close())

  const suggest = (title: string) =>
    postJson(`${server.origin}/api/widget/v1/suggestions`, { organizationId: "org_acme", boardId: "b_feat", title, content: "" })

  const degraded = async () => {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
    const value = (to: string) => {
      const match = new RegExp(`^hearken_suggestions_degraded_total\\{to="${to}"\\} (\\S+)$`, "m").exec(text)
      if (match === null) throw new Error(`no hearken_suggestions_degraded_total{to="${to}"} in the scrape`)
      return Number(match[1])
    }
    return { lexical: value("lexical"), none: value("none") }
  }

  const lines = () => server.output().split("\n").filter((line) => gaveWayLine.test(line))

  /** Runs `body` while `table` is locked in ACCESS EXCLUSIVE mode by another session. */
  const whileLocked = async <A>(table: string, body: () => Promise<A>) => {
    const lock = holdLock(group.db.url, `LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`)
    await lock.held
    try {
      return await body()
    } finally {
      await lock.release()
    }
  }

  it("answers as usual while no statement runs past it, and counts nothing", async () => {
    const res = await suggest("Dark mode")
    expect(res.status).toBe(200)
    expect(res.body.map((m: { id: string }) => m.id)).toEqual(["p_dark"])
    // Every series exists from the start, at 0.
    expect(await degraded()).toEqual({ lexical: 0, none: 0 })
    expect(lines()).toEqual([])
  })

  it("answers 200 with the lexical half alone when the semantic half's statement is cancelled", async () => {
    // The nearest-post search reads post_embeddings; the lexical half never does.
    const res = await whileLocked("post_embeddings", () => suggest("Dark mode"))
    expect(res.status).toBe(200)
    expect(res.body).toEqual([
      { id: "p_dark", title: "Dark mode", excerpt: "Please add a dark theme for the dashboard", slug: expect.any(String) }
    ])
    expect(await degraded()).toEqual({ lexical: 1, none: 0 })
    await eventually("the give-way line", async () => lines().length === 1 || undefined)
    expect(lines()[0]).toContain(
      "Suggestions gave way: a statement ran past the suggestions' statement timeout (300 ms); the semantic half's statement was cancelled, " +
        "and the answer was the lexical half's alone. Since the last such line: 1 lexical only, 0 []."
    )
  })

  it("answers 200 [] when the lexical half's statement is cancelled, and logs no second line within the minute", async () => {
    const answers = await whileLocked("posts", () => Promise.all([suggest("Dark mode"), suggest("Export to CSV")]))
    for (const res of answers) {
      expect(res.status).toBe(200)
      expect(res.body).toEqual([])
    }
    expect(await degraded()).toEqual({ lexical: 1, none: 2 })
    expect(lines()).toHaveLength(1)
  })

  it("answers in full again once the statements fit, on connections the cancelled ones left clean", async () => {
    for (let i = 0; i < 5; i++) {
      const res = await suggest("Dark mode")
      expect(res.status).toBe(200)
      expect(res.body.map((m: { id: string }) => m.id)).toEqual(["p_dark"])
    }
    expect(await degraded()).toEqual({ lexical: 1, none: 2 })
  })
})

const logged = () => {
  const lines: Array<string> = []
  const logger = Logger.make(({ logLevel, message }) => {
    lines.push(`${logLevel} ${Array.isArray(message) ? message.join(" ") : String(message)}`)
  })
  return { lines, layer: Logger.layer([logger]) }
}

describe("the give-way line, on the TestClock", () => {
  const line = (half: string, lexical: number, none: number) =>
    `Warn Suggestions gave way: a statement ran past the suggestions' statement timeout (300 ms); ${half}. ` +
    `Since the last such line: ${lexical} lexical only, ${none} []. ` +
    "They are counted in hearken_suggestions_degraded_total; this is logged at most once a minute."
  const lexical = "the semantic half's statement was cancelled, and the answer was the lexical half's alone"
  const none = "the lexical half's statement was cancelled, and the answer was []"

  it.effect("is logged at most once a minute, with what gave way since the last line", () => {
    const log = logged()
    return Effect.gen(function*() {
      const gaveWay = yield* gaveWayLog(300)
      yield* gaveWay("lexical")
      expect(log.lines).toEqual([line(lexical, 1, 0)])
      yield* TestClock.adjust(30_000)
      yield* gaveWay("none")
      yield* gaveWay("none")
      yield* TestClock.adjust(29_999)
      yield* gaveWay("lexical")
      expect(log.lines).toHaveLength(1)
      // A minute after the first line: the next is logged, and counts the three it did not log.
      yield* TestClock.adjust(1)
      yield* gaveWay("none")
      expect(log.lines).toEqual([line(lexical, 1, 0), line(none, 1, 3)])
      yield* TestClock.adjust(59_999)
      yield* gaveWay("lexical")
      expect(log.lines).toHaveLength(2)
      yield* TestClock.adjust(10 * 60_000)
      yield* gaveWay("lexical")
      expect(log.lines).toEqual([line(lexical, 1, 0), line(none, 1, 3), line(lexical, 2, 0)])
    }).pipe(Effect.provide(log.layer))
  })
})
