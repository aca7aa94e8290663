import { Limits } from "@hearken/api/effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeEmbeddings, startFakeEmbeddings } from "./support/embeddings.js"
import { flood, type FloodRequest, productionNodeOptions } from "./support/flood.js"
import { baseFixture, fixturePost } from "./support/fixtures.js"
import { type ServerProcess } from "./support/process.js"
import { useServerProcesses } from "./support/server.js"
import { eventually } from "./support/wait.js"
import { watchServer } from "./support/watch.js"

/**
 * Decision 0025: visitors who name organizations and boards that do not
 * exist, each time another one, must not grow the server's memory. Before it,
 * `GET /boards` and `GET /updates` for 13–17k distinct 15,000-character
 * organizations, and `POST /suggestions` (with embeddings) for 185 distinct
 * ~1 MiB boards, ran a server started as production starts it out of heap.
 * Here each flood runs to three times that, as production starts the server
 * (a 256 MB old space), from 20 loopback addresses: distinct ids of the
 * longest length the API takes are answered, longer ones refused with 400,
 * while the RSS stays ≤ 300 MB and `/health` answers within 1 s.
 */

const fixture = baseFixture()
fixture.organizations[0]!.posts = [
  fixturePost("p_dark", "Dark mode", "<p>Please add a dark theme</p>"),
  fixturePost("p_export", "Export to CSV", "<p>All posts as a spreadsheet</p>")
]

let fake: FakeEmbeddings | undefined
const servers = useServerProcesses(fixture, { LOG_LEVEL: "error", NODE_OPTIONS: productionNodeOptions })
beforeAll(async () => {
  fake = await startFakeEmbeddings()
})
afterAll(async () => {
  await fake?.close()
})

const maxRssMb = 300
const maxHealthMs = 1_000
const addresses = 20

/** The `i`-th distinct id of exactly `length` characters. */
const idOf = (prefix: string, i: number, length: number) => `${prefix}-${i}-`.padEnd(length, "x")

const tooLong = (field: string) => JSON.stringify({
  _tag: "DataValidationError",
  message: `${field}: Expected a string with at most ${Limits.id} code points`
})

/**
 * Sends `count` requests, `make(i)` each, from `addresses` addresses, while
 * watching the server's memory and `/health`; checks every answer, that the
 * server outlived the flood, and the bounds.
 */
const survive = async (server: ServerProcess, count: number, make: (i: number) => FloodRequest,
  check: (i: number, status: number, body: string) => void) => {
  // Killed past 1.5 GB, so that a server that does not hold costs the machine no more than that.
  const watcher = watchServer(server, 1_500)
  const gone = () => server.child.exitCode !== null || server.child.signalCode !== null
  let answered = 0
  let failure: unknown
  try {
    answered = await flood(server.origin, { count, addresses, perAddress: 1, stop: gone, make, check })
  } catch (error) {
    failure = error
  }
  const seen = await watcher.stop()
  expect(gone(), `the server died: ${server.output().slice(-1_500)}`).toBe(false)
  if (failure !== undefined) throw failure
  expect(answered).toBe(count)
  expect(seen.peakRssMb).toBeLessThanOrEqual(maxRssMb)
  // A failed probe counts as Infinity.
  expect(seen.slowestHealthMs).toBeLessThanOrEqual(maxHealthMs)
  return seen
}

describe("floods of ids that name nothing", () => {
  it("GET /boards and /updates for 51,000 distinct unknown organizations: memory stays bounded, /health answers", async () => {
    const server = await servers.processes.start({ RATE_LIMIT_MULTIPLIER: "100" })
    const count = 51_000
    // One request in ten names an organization longer than the API takes, as long as the ones that killed the server.
    const oversize = (i: number) => i % 10 === 9
    const statuses = new Map<number, number>()
    const seen = await survive(
      server,
      count,
      (i) => ({ path: `/api/widget/v1/${i % 2 === 0 ? "boards" : "updates"}?organizationId=${idOf("org", i, oversize(i) ? 15_000 : Limits.id)}` }),
      (i, status, body) => {
        statuses.set(status, (statuses.get(status) ?? 0) + 1)
        if (oversize(i)) expect([status, body]).toEqual([400, tooLong("organizationId")])
        else expect([status, body]).toEqual([200, "[]"])
      }
    )
    console.log(`unknown organizations: ${JSON.stringify({ ...seen, statuses: Object.fromEntries(statuses) })}`)
    await servers.processes.stop(server)
  }, 180_000)

  it("POST /suggestions with embeddings for 3,000 distinct unknown boards and 2,000 oversize ones: bounded, and no embeddings call", async () => {
    const server = await servers.processes.start({
      RATE_LIMIT_MULTIPLIER: "1000",
      EMBEDDINGS_URL: fake!.url,
      EMBEDDINGS_MODEL: "concepts-1",
      EMBEDDINGS_DIMENSIONS: String(fake!.dimensions),
      // No background embedding of the fixture's posts during the flood: every call counted would be a draft's.
      EMBEDDINGS_RETRY_BASE_MS: "600000"
    })
    // The fixture's posts are embedded once the server is up; only what comes after counts.
    await eventually("the fixture's posts embedded", async () =>
      (await servers.db.query<{ n: number }>((sql) => sql`SELECT count(*)::int AS n FROM post_embeddings WHERE embedding IS NOT NULL`))[0]!.n === 2 || undefined)
    const callsBefore = fake!.calls
    const count = 5_000
    // Two in five name a board of 100,000 characters: 2,000 of them carry as many bytes of ids as the 185 of 1 MiB that killed the server.
    const oversize = (i: number) => i % 5 >= 3
    const draft = { title: "Dark mode please", content: "A dark theme for the dashboard" }
    const seen = await survive(
      server,
      count,
      (i) => ({
        path: "/api/widget/v1/suggestions",
        method: "POST",
        body: JSON.stringify({ organizationId: "org_acme", boardId: idOf("board", i, oversize(i) ? 100_000 : Limits.id), ...draft })
      }),
      (i, status, body) => {
        if (oversize(i)) expect([status, body]).toEqual([400, tooLong("boardId")])
        else expect([status, body]).toEqual([200, "[]"])
      }
    )
    console.log(`unknown boards: ${JSON.stringify({ ...seen, embeddingsCalls: fake!.calls - callsBefore })}`)
    // An unknown board is answered before the draft is embedded.
    expect(fake!.calls - callsBefore).toBe(0)
    await servers.processes.stop(server)
  }, 180_000)
})
