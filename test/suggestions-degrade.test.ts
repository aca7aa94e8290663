import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Fiber, Layer, Logger, References } from "effect"
import { TestClock } from "effect/testing"
import { mkdtemp, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll } from "vitest"
import * as ServerConfig from "../packages/server/src/config/ServerConfig.js"
import { Sanitizer } from "../packages/server/src/content/Sanitizer.js"
import * as Database from "../packages/server/src/sql/Database.js"
import * as ReadReplica from "../packages/server/src/sql/ReadReplica.js"
import { LexicalSearch } from "../packages/server/src/suggestions/LexicalSearch.js"
import { Semantic } from "../packages/server/src/suggestions/Semantic.js"
import { gaveWayLog, SuggestionQueries } from "../packages/server/src/suggestions/SuggestionQueries.js"
import { Suggestions } from "../packages/server/src/suggestions/Suggestions.js"
import { widgetClient } from "./support/client.js"
import { createDatabase, type TestDatabase } from "./support/database.js"
import { startFakeEmbeddings } from "./support/embeddings.js"
import { holdLock } from "./support/faults.js"
import { baseFixture, fixturePost } from "./support/fixtures.js"
import { freePort } from "./support/net.js"
import { seedScript, spawnScript, type ServerProcess } from "./support/process.js"
import { useServerProcesses } from "./support/server.js"
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
    widgetClient(server).suggest({ organizationId: "org_acme", boardId: "b_feat", title, content: "" })

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

describe("a large board's last known size, on the TestClock", () => {
  // 1,001 public posts: a board large enough (1,000) to have its size kept.
  const large = baseFixture()
  large.organizations[0]!.posts = [
    fixturePost("p_dark", "Dark mode", "<p>Please add a dark theme for the dashboard</p>"),
    ...Array.from({ length: 1_000 }, (_, i) => fixturePost(`p_filler_${i}`, `Filler request ${i}`, `<p>An ordinary request, number ${i}</p>`))
  ]
  let db: TestDatabase
  beforeAll(async () => {
    db = await createDatabase()
    const dir = await mkdtemp(join(tmpdir(), "hearken-sizes-"))
    await writeFile(join(dir, "fixture.json"), JSON.stringify(large))
    const seeding = spawnScript(seedScript, [join(dir, "fixture.json")], { DATABASE_URL: db.url, LOG_LEVEL: "error" })
    expect(await seeding.exited).toBe(0)
    // PostgreSQL's estimate of the table's rows: what the background count looks at first.
    await db.query((sql) => sql`ANALYZE posts`)
  })
  afterAll(() => db?.drop())

  /** The real Suggestions, on the real database (no embeddings: the lexical answer alone), in this process. */
  const suggestionsOn = (url: string) =>
    Suggestions.layerNoDeps.pipe(
      Layer.provide(Layer.succeed(Semantic, Semantic.of({ nearest: () => Effect.succeedNone }))),
      Layer.provide([SuggestionQueries.layer, LexicalSearch.layer]),
      Layer.provide(Sanitizer.layer),
      Layer.provide(ReadReplica.layer),
      Layer.provide(Database.layer),
      Layer.provide(ServerConfig.layer),
      Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({
        // 2 s: the search must still be waiting when the test, seeing it wait, releases the lock, on a loaded CI machine too.
        env: { DATABASE_URL: url, SUGGESTIONS_STATEMENT_TIMEOUT_MS: "2000", DATABASE_STATEMENT_TIMEOUT_MS: "2000", LOG_LEVEL: "debug" }
      })))
    )

  /** Real time: the database's waits are real, whatever the TestClock says. */
  const pause = Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 20)))
  const until = <A>(what: string, check: Effect.Effect<A | undefined>) =>
    Effect.gen(function*() {
      for (let i = 0; i < 1_500; i++) {
        const value = yield* check
        if (value !== undefined) return value
        yield* pause
      }
      return yield* Effect.die(new Error(`waited 30 s for ${what}`))
    })
  /** Whether the lexical search (not the count) waits on the lock. */
  const searchWaits = Effect.promise(() =>
    db.query<{ n: number }>((sql) =>
      sql`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%jsonb_to_recordset%'`
    ).then((rows) => rows[0]!.n > 0)
  )
  /** Backends running the board's count (the statement `LexicalSearch.boardSize` sends), or only those waiting on a lock. */
  const countsRunning = (onlyWaiting: boolean) =>
    Effect.promise(() =>
      db.query<{ n: number }>((sql) =>
        sql`SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND state = 'active' AND query LIKE 'SELECT count(*)::int AS n FROM posts p%'
            AND (${!onlyWaiting} OR wait_event_type = 'Lock')`
      ).then((rows) => rows[0]!.n)
    )
  const locked = () =>
    Effect.promise(async () => {
      const lock = holdLock(db.url, "LOCK TABLE posts IN ACCESS EXCLUSIVE MODE")
      await lock.held
      return lock
    })

  it.effect("answers lexically with the last known size when a recount times out, and does not count again in the background within a minute of a failure", () => {
    const log = logged()
    const counts = () => log.lines.filter((line) => line.includes("in the background") && line.startsWith("Debug Suggestions: counting")).length
    const failures = () => log.lines.filter((line) => line.startsWith("Warn Suggestions: could not count"))
    return Effect.gen(function*() {
      const suggestions = yield* Suggestions
      const suggest = (title: string) => suggestions.suggest({ organizationId: "org_acme", boardId: "b_feat", title, content: "" })
      const ids = (matches: ReadonlyArray<{ readonly id: string }>) => matches.map((m) => m.id)

      // Counted, and its size kept.
      expect(ids(yield* suggest("Dark mode"))).toEqual(["p_dark"])
      // Past the cache's lifetime: the next draft counts again, and the count runs past the suggestions' limit.
      yield* TestClock.adjust(60_000)
      const first = yield* locked()
      const answer = yield* Effect.forkChild(suggest("Dark mode"))
      // The count gave way to the last known size: the search runs (and waits on the lock); then the lock goes.
      yield* until("the search, or the answer", Effect.map(searchWaits, (waits) => waits || answer.pollUnsafe() !== undefined || undefined))
      // The background count the timeout started waits on the lock too; once the lock goes it ends, and the board is counted.
      yield* until("the background count, on the lock", Effect.map(countsRunning(true), (n) => n > 0 || undefined))
      yield* Effect.promise(first.release)
      expect(ids(yield* Fiber.join(answer))).toEqual(["p_dark"])
      expect(counts()).toBe(1)
      yield* until("the background count's end", Effect.map(countsRunning(false), (n) => n === 0 || undefined))

      // A minute on, the recount (in the background, within the database's limit) fails too.
      yield* TestClock.adjust(60_000)
      const second = yield* locked()
      expect(yield* suggest("Dark mode")).toEqual([])
      expect(counts()).toBe(2)
      yield* until("the failed count's line", Effect.sync(() => failures().length === 1 || undefined))
      expect(failures()[0]).toContain("its drafts use its last known size")
      // Within the minute, no count in the background again; the drafts have the last known size.
      expect(yield* suggest("Dark mode")).toEqual([])
      yield* Effect.promise(second.release)
      expect(ids(yield* suggest("Dark mode"))).toEqual(["p_dark"])
      yield* TestClock.adjust(59_999)
      expect(ids(yield* suggest("Dark mode"))).toEqual(["p_dark"])
      expect(counts()).toBe(2)
      expect(failures()).toHaveLength(1)
    }).pipe(
      Effect.provide(suggestionsOn(db.url)),
      Effect.provide(log.layer),
      Effect.provideService(References.MinimumLogLevel, "Debug")
    )
  })
})
