import { mkdtemp, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createDatabase, type TestDatabase } from "./support/database.js"
import { type FakeEmbeddings, startFakeEmbeddings } from "./support/embeddings.js"
import { baseFixture } from "./support/fixtures.js"
import { processGroup, type ServerProcess } from "./support/process.js"
import { ids, widgetClient } from "./support/client.js"
import { eventually } from "./support/wait.js"

/**
 * Background embedding across real server processes on one database: the
 * back-fill of imported posts while the API is down and after it comes back,
 * a restart, a second instance, a model change, and logs that never show the key.
 */
const concepts = [["invoice", "bill", "receipt"], ["dark mode", "night theme"]]
const posts = 70
/**
 * A made-up word per number: posts that differ in more than a number, so
 * that the board's posts are not near-copies of each other, which would set
 * a background no draft stands out from (decision 0023).
 */
const syllables = ["ka", "lo", "mi", "nu", "pe", "ro", "su", "ti", "va", "ze"]
const word = (n: number) => [n % 10, Math.floor(n / 10) % 10, Math.floor(n / 100) % 10].map((i) => syllables[i]).join("")
const key = "sk-process-secret-4242"

let fake: FakeEmbeddings
let db: TestDatabase
let env: Record<string, string>
const processes = processGroup(() => env)

beforeAll(async () => {
  fake = await startFakeEmbeddings({ dimensions: 32, concepts })
  db = await createDatabase()
  const fixture = baseFixture()
  fixture.organizations[0]!.posts = [
    ...Array.from({ length: posts }, (_, i) => ({
      id: `p_${i}`,
      boardId: "b_feat",
      title: i === 42 ? "Send me the invoices as PDF" : `Request ${word(i)}`,
      content: `<p>Body ${i === 42 ? 42 : word(posts + i)}</p>`
    })),
    { id: "p_private", boardId: "b_feat", title: "Invoices, privately", content: "<p>bills</p>", visibility: "private" }
  ]
  const dir = await mkdtemp(join(tmpdir(), "hearken-embeddings-"))
  await writeFile(join(dir, "fixture.json"), JSON.stringify(fixture))
  env = {
    DATABASE_URL: db.url,
    SEED_FILE: join(dir, "fixture.json"),
    LOG_LEVEL: "info",
    RATE_LIMIT_MULTIPLIER: "1000",
    EMBEDDINGS_URL: fake.url,
    EMBEDDINGS_MODEL: "concepts-a",
    EMBEDDINGS_DIMENSIONS: "32",
    EMBEDDINGS_API_KEY: key,
    EMBEDDINGS_TIMEOUT_MS: "500",
    EMBEDDINGS_RETRY_BASE_MS: "150"
  }
})

afterAll(async () => {
  processes.killAll()
  await fake.close()
  await db.drop()
})

const start = processes.start
const stop = async (server: ServerProcess) => expect(await processes.stop(server)).toBe(0)

const counts = (model: string) =>
  db.query<{ embedded: number; failed: number }>((sql) =>
    sql`SELECT count(*) FILTER (WHERE embedding IS NOT NULL)::int AS embedded,
        count(*) FILTER (WHERE embedding IS NULL AND attempts > 0)::int AS failed
      FROM post_embeddings WHERE model = ${model}`
  ).then((rows) => rows[0]!)

const suggest = (server: ServerProcess, title: string) =>
  widgetClient(server).suggest({ organizationId: "org_acme", boardId: "b_feat", title, content: "" }).then(ids)

describe("background embedding across processes", () => {
  it("back-fills imported posts, retries while the API is down, and finishes once it is back", async () => {
    fake.mode = "error"
    const server = await start()
    await eventually("every post to have failed once", async () => (await counts("concepts-a")).failed === posts || undefined)
    // Meanwhile suggestions answer lexically.
    expect(await suggest(server, "A bill for my purchase")).toEqual([])
    fake.mode = "ok"
    await eventually("the back-fill to finish", async () => (await counts("concepts-a")).embedded === posts || undefined)
    // Once the board is calibrated for the model, right after the back-fill.
    await eventually("the meaning found", async () => (await suggest(server, "A bill for my purchase"))[0] === "p_42" || undefined)
    expect(await suggest(server, "A bill for my purchase")).toEqual(["p_42"])
    const log = server.output()
    expect(log).toContain("Embeddings API call failed: HTTP 500")
    expect(log).not.toContain(key)
    await stop(server)
  }, 60_000)

  it("after a model change, a second instance back-fills the new model while the first serves the old one", async () => {
    const a = await start()
    const before = fake.inputs.length
    const b = await start({ EMBEDDINGS_MODEL: "concepts-b" })
    await eventually("the new model's back-fill", async () => (await counts("concepts-b")).embedded === posts || undefined)
    expect(fake.model).toBe("concepts-b")
    // Every public post once for the new model; the old model's vectors stay and are not re-embedded.
    const sent = fake.inputs.slice(before)
    expect(sent).toHaveLength(posts)
    expect(new Set(sent).size).toBe(posts)
    expect((await counts("concepts-a")).embedded).toBe(posts)
    await eventually("the new model's calibration", async () => (await suggest(b, "A bill for my purchase"))[0] === "p_42" || undefined)
    expect(await suggest(b, "A bill for my purchase")).toEqual(["p_42"])
    expect(await suggest(a, "Receipt please")).toEqual(["p_42"])
    const indexes = await db.query<{ indexdef: string }>((sql) =>
      sql`SELECT indexdef FROM pg_indexes WHERE tablename = 'post_embeddings' AND indexdef LIKE '%hnsw%' ORDER BY indexdef`
    )
    expect(indexes.map((i) => i.indexdef.replace(/post_embeddings_hnsw_[0-9a-f]+/, "NAME")).sort()).toEqual([
      "CREATE INDEX NAME ON public.post_embeddings USING hnsw (((embedding)::vector(32)) vector_cosine_ops) WHERE ((model = 'concepts-a'::text) AND (dimensions = 32))",
      "CREATE INDEX NAME ON public.post_embeddings USING hnsw (((embedding)::vector(32)) vector_cosine_ops) WHERE ((model = 'concepts-b'::text) AND (dimensions = 32))"
    ])
    await Promise.all([stop(a), stop(b)])
  }, 60_000)

  it("resumes after a restart and embeds a changed post again", async () => {
    await db.query((sql) => sql`UPDATE posts SET title = 'Send me the receipts as PDF' WHERE id = 'p_42'`)
    const before = fake.inputs.length
    // Without the seed, which would put the old title back.
    const server = await start({ SEED_FILE: "" })
    await eventually("the changed post re-embedded", async () =>
      fake.inputs.slice(before).includes("Send me the receipts as PDF\n\nBody 42") || undefined)
    await stop(server)
    expect(fake.inputs.slice(before)).toEqual(["Send me the receipts as PDF\n\nBody 42"])
  }, 60_000)
})
