import { execFile } from "node:child_process"
import { join } from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Embedder, type FakeEmbeddings, loadEmbedder, startFakeEmbeddings } from "./support/embeddings.js"
import { ensureGlove, gloveDirectory } from "./support/glove.js"
import { postJson } from "./support/server.js"

/** The fake's three embedders, over HTTP as the server calls them. */
const fakes = new Map<Embedder, FakeEmbeddings>()

beforeAll(async () => {
  for (const embedder of ["concept", "glove", "ngram"] as const) fakes.set(embedder, await startFakeEmbeddings({ embedder }))
}, 10 * 60_000) // GloVe's first fetch downloads 118 MB
afterAll(async () => {
  await Promise.all([...fakes.values()].map((fake) => fake.close()))
})

const embed = async (embedder: Embedder, input: ReadonlyArray<string>) => {
  const res = await postJson(`${fakes.get(embedder)!.url}/embeddings`, { model: embedder, input })
  expect(res.status).toBe(200)
  return (res.body as { data: Array<{ embedding: Array<number> }> }).data.map((d) => d.embedding)
}

const dot = (a: ReadonlyArray<number>, b: ReadonlyArray<number>) => a.reduce((sum, x, i) => sum + x * b[i]!, 0)

/** The cosines of the first text's vector with the others'. */
const similarities = async (embedder: Embedder, [first, ...others]: ReadonlyArray<string>) => {
  const [v, ...rest] = await embed(embedder, [first!, ...others])
  return rest.map((w) => dot(v!, w))
}

describe("the fake's embedders", () => {
  it("give unit vectors of 64 (concept), 100 (glove) and 256 (ngram) dimensions, as they do in-process", async () => {
    const texts = ["Dark mode please", "Exporter en CSV", "ダークモード", "", "1234 !!"]
    for (const [embedder, size] of [["concept", 64], ["glove", 100], ["ngram", 256]] as const) {
      expect(fakes.get(embedder)!.dimensions).toBe(size)
      const vectors = await embed(embedder, texts)
      const local = await loadEmbedder({ embedder })
      vectors.forEach((vector, i) => {
        expect(vector).toHaveLength(size)
        expect(Math.hypot(...vector)).toBeCloseTo(1, 6)
        expect(vector).toEqual(local.embed(texts[i]!))
      })
    }
  })

  it("glove puts texts of the same meaning in other words close, and other topics far", async () => {
    const [kitten, revenue] = await similarities("glove", ["The cat rested on the carpet", "The kitten slept on the rug", "Quarterly revenue fell sharply"])
    expect(kitten).toBeGreaterThan(0.5)
    expect(revenue).toBeLessThan(0.1)
    const [nightTheme, invoices] = await similarities("glove", ["Dark mode for the dashboard", "A night theme for the dashboard", "Invoices as PDF"])
    expect(nightTheme).toBeGreaterThan(invoices! + 0.3)
  })

  it("glove knows contractions and accents as the words they stand for", async () => {
    const [same] = await similarities("glove", ["I do not like the cafe", "I don't like the café"])
    expect(same).toBeCloseTo(1, 6)
  })

  it("glove gives every text without a known word one fixed vector, orthogonal to the others", async () => {
    const [chinese, japanese, digits, english] = await embed("glove", ["请添加深色模式", "ダークモードが欲しい", "42 1234", "Dark mode"])
    expect(japanese).toEqual(chinese)
    expect(digits).toEqual(chinese)
    expect(dot(chinese!, english!)).toBeCloseTo(0, 6)
  })

  it("ngram puts a misspelt text near its correct spelling, and shares nothing with another", async () => {
    const [typo, other] = await similarities("ngram", ["Notification sound settings", "Notifcation sound setings", "Export to spreadsheet"])
    expect(typo).toBeGreaterThan(0.6)
    expect(Math.abs(other!)).toBeLessThan(0.2)
    const [cjk, unrelated] = await similarities("ngram", ["添付ファイルの一括ダウンロード", "添付ファイルをダウンロード", "请添加深色模式"])
    expect(cjk).toBeGreaterThan(unrelated! + 0.4)
  })

  it("keep the fake's modes", async () => {
    const fake = fakes.get("glove")!
    try {
      fake.mode = "wrong-size"
      expect((await embed("glove", ["Dark mode"]))[0]).toHaveLength(99)
      fake.mode = "error"
      expect((await postJson(`${fake.url}/embeddings`, { input: "Dark mode" })).status).toBe(500)
    } finally {
      fake.mode = "ok"
    }
  })

  it("glove takes no other size", async () => {
    await expect(loadEmbedder({ embedder: "glove", dimensions: 64 })).rejects.toThrow("GloVe vectors have 100 dimensions, not 64")
  })
})

describe("the GloVe cache", () => {
  it("is read once per process", async () => {
    expect(await ensureGlove()).toBe(await ensureGlove())
  })

  it("serves another process without npm, in a few seconds", async () => {
    const started = Date.now()
    // No PATH: a process that had to fetch would find no npm to run.
    const { stdout } = await promisify(execFile)(process.execPath, [join(import.meta.dirname, "../scripts/fetch-glove.ts")], {
      env: { ...process.env, PATH: "" }
    })
    expect(stdout).toContain(`GloVe vectors: ${gloveDirectory()} (200000 words`)
    expect(Date.now() - started).toBeLessThan(10_000)
  })
})
