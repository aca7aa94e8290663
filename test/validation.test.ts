
import { describe, expect, it } from "vitest"
import { baseFixture } from "./support/fixtures.js"
import { getJson, postJson, startSeededServer, useServer } from "./support/server.js"

const server = useServer(() => startSeededServer(baseFixture()))

const feedback = { organizationId: "org_acme", boardId: "b_feat", title: "Valid title", content: "Valid content" }
const suggestions = { organizationId: "org_acme", boardId: "b_feat", title: "Valid title", content: "Valid content" }
const emoji = "😀" // one code point, two UTF-16 units

const expectInvalid = (res: { status: number; body: any }, field: string) => {
  expect(res.status).toBe(400)
  expect(res.body._tag).toBe("DataValidationError")
  expect(typeof res.body.message).toBe("string")
  expect(res.body.message.startsWith(`${field}:`)).toBe(true)
}

const metadataOf = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, "v"]))

describe.each([
  ["feedback", feedback],
  ["suggestions", suggestions]
] as const)("POST /%s field limits", (endpoint, base) => {
  const send = (body: unknown) => postJson(`${server.api}/${endpoint}`, body)

  it.each([
    ["title", 200],
    ["content", 20_000]
  ] as const)("%s: %i code points pass, one more is 400", async (field, limit) => {
    expect((await send({ ...base, [field]: "a".repeat(limit) })).status).toBe(200)
    expect((await send({ ...base, [field]: emoji.repeat(limit) })).status).toBe(200)
    expectInvalid(await send({ ...base, [field]: "a".repeat(limit + 1) }), field)
    expectInvalid(await send({ ...base, [field]: emoji.repeat(limit + 1) }), field)
  })

  it.each(["organizationId", "boardId", "title", "content"])("%s: missing, null, number and array are 400", async (field) => {
    const { [field]: _, ...without } = base as Record<string, unknown>
    expectInvalid(await send(without), field)
    for (const bad of [null, 42, ["a"], { a: 1 }, true]) {
      expectInvalid(await send({ ...base, [field]: bad }), field)
    }
  })

  it("names a missing field as required", async () => {
    const { title: _, ...without } = base
    const res = await send(without)
    expect(res.body).toEqual({ _tag: "DataValidationError", message: "title: is required" })
  })

  it.each([
    ["malformed JSON", "{\"organizationId\": ", "body: malformed JSON"],
    ["a JSON array", "[]", "body: Expected a JSON object"],
    ["a JSON string", "\"hello\"", "body: Expected a JSON object"],
    ["JSON null", "null", "body: Expected a JSON object"],
    ["an empty body", "", "body: Expected a JSON object"]
  ])("refuses %s with a message", async (_, raw, message) => {
    const res = await send(raw)
    expect(res.status).toBe(400)
    expect(res.body).toEqual({ _tag: "DataValidationError", message })
  })

  it.each(["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"])(
    "refuses Content-Type %s",
    async (contentType) => {
      const res = await postJson(`${server.api}/${endpoint}`, base, { "content-type": contentType })
      expect(res.status).toBe(400)
      expect(res.body).toEqual({ _tag: "DataValidationError", message: "Content-Type: must be application/json" })
    }
  )

  it("accepts application/json with a charset", async () => {
    const res = await postJson(`${server.api}/${endpoint}`, base, { "content-type": "application/json; charset=utf-8" })
    expect(res.status).toBe(200)
  })

  it("refuses a body over 512 KiB, announced or chunked, with 400", async () => {
    const big = JSON.stringify({ ...base, content: "a".repeat(1024 * 1024 + 10) })
    const announced = await send(big)
    expect(announced.status).toBe(400)
    expect(announced.body).toEqual({ _tag: "DataValidationError", message: "body: larger than 524288 bytes (512 KiB)" })
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(big))
        controller.close()
      }
    })
    const chunked = await fetch(`${server.api}/${endpoint}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: stream,
      duplex: "half"
    } as RequestInit)
    expect(chunked.status).toBe(400)
    expect(await chunked.json()).toEqual({ _tag: "DataValidationError", message: "body: larger than 524288 bytes (512 KiB)" })
  })

  it.each(["organizationId", "boardId"])("%s: 200 code points are taken, one more is 400 naming it (decision 0025)", async (field) => {
    // An id of the longest length names nothing here: the answer for an unknown one, not a refusal.
    for (const id of ["a".repeat(200), emoji.repeat(200)]) {
      const res = await send({ ...base, [field]: id })
      if (endpoint === "feedback") expect([res.status, res.body._tag]).toEqual([404, "NotFoundError"])
      else expect([res.status, res.body]).toEqual([200, []])
    }
    for (const id of ["a".repeat(200 + 1), emoji.repeat(200 + 1), "a".repeat(100_000)]) {
      const res = await send({ ...base, [field]: id })
      expect(res.status).toBe(400)
      expect(res.body).toEqual({ _tag: "DataValidationError", message: `${field}: Expected a string with at most 200 code points` })
    }
  })

  it("refuses a NUL character in any string with 400", async () => {
    expectInvalid(await send({ ...base, title: "a\u0000b" }), "title")
    expectInvalid(await send({ ...base, content: "\u0000" }), "content")
  })

  it("accepts and ignores unknown fields", async () => {
    expect((await send({ ...base, somethingElse: [1, 2, 3] })).status).toBe(200)
  })
})

describe.each(["boards", "updates"])("GET /%s organizationId", (endpoint) => {
  const get = (organizationId: string) => getJson(`${server.api}/${endpoint}?organizationId=${encodeURIComponent(organizationId)}`)

  it("takes 200 code points, and refuses one more with 400 naming it (decision 0025)", async () => {
    for (const id of ["a".repeat(200), emoji.repeat(200)]) {
      const res = await get(id)
      expect(res.status).toBe(200)
      expect(res.body).toEqual([])
    }
    for (const id of ["a".repeat(200 + 1), emoji.repeat(200 + 1), "a".repeat(15_000)]) {
      const res = await get(id)
      expect(res.status).toBe(400)
      expect(res.body).toEqual({ _tag: "DataValidationError", message: "organizationId: Expected a string with at most 200 code points" })
    }
  })
})

describe("POST /feedback metadata and token", () => {
  const send = (body: unknown) => postJson(`${server.api}/feedback`, body)

  it("metadata: 20 properties pass, 21 is 400", async () => {
    expect((await send({ ...feedback, metadata: metadataOf(20) })).status).toBe(200)
    expectInvalid(await send({ ...feedback, metadata: metadataOf(21) }), "metadata")
  })

  it("metadata key: 64 code points pass, 65 is 400", async () => {
    expect((await send({ ...feedback, metadata: { [emoji.repeat(64)]: "v" } })).status).toBe(200)
    const res = await send({ ...feedback, metadata: { ["k".repeat(65)]: "v" } })
    expect(res.body).toEqual({ _tag: "DataValidationError", message: "metadata: Expected keys of at most 64 code points" })
  })

  it("metadata key: a NUL character is 400, never a silently dropped key", async () => {
    const res = await send({ ...feedback, title: "NUL key", metadata: { "a\u0000b": "v", ok: "x" } })
    expect(res.body).toEqual({ _tag: "DataValidationError", message: "metadata: Expected keys without NUL (U+0000) characters" })
    expect(await server.db.query((sql) => sql`SELECT id FROM posts WHERE title = 'NUL key'`)).toEqual([])
  })

  it("metadata value: 500 code points pass, 501 is 400", async () => {
    expect((await send({ ...feedback, metadata: { k: emoji.repeat(500) } })).status).toBe(200)
    expectInvalid(await send({ ...feedback, metadata: { k: "v".repeat(501) } }), "metadata.k")
  })

  it("metadata: absent and {} are fine; null, arrays and non-string values are 400", async () => {
    expect((await send(feedback)).status).toBe(200)
    expect((await send({ ...feedback, metadata: {} })).status).toBe(200)
    for (const bad of [null, [], ["a"], "text", 7]) expectInvalid(await send({ ...feedback, metadata: bad }), "metadata")
    for (const bad of [1, true, null, { a: "b" }, ["x"]]) expectInvalid(await send({ ...feedback, metadata: { k: bad } }), "metadata.k")
  })

  it("token: over 8,192 characters is 400, not 401", async () => {
    expectInvalid(await send({ ...feedback, token: "a".repeat(8_193) }), "token")
    expect((await send({ ...feedback, token: "a".repeat(8_192) })).status).toBe(401)
  })

  it("token: null or a number is 400", async () => {
    expectInvalid(await send({ ...feedback, token: null }), "token")
    expectInvalid(await send({ ...feedback, token: 5 }), "token")
  })

  it("title: nothing visible is 400 (white space, zero-width and other invisible characters)", async () => {
    const invisible = ["", " ", "\t\n ", "\u00a0", "\u200b\u200b\u200b", "\u200c\u200d\u2060\ufeff", "\u00ad", "\u3164",
      "\u2800", "\u0301\u0308", "\u202e\u202d", "\u200b \u200b", "\ue000"]
    for (const title of invisible) {
      const res = await send({ ...feedback, title })
      expect(res.status).toBe(400)
      expect(res.body).toEqual({ _tag: "DataValidationError", message: "title: Expected a title containing a visible character" })
    }
    for (const title of ["\u200bx\u200b", "é", "中", "😀", "e\u0301"]) expect((await send({ ...feedback, title })).status).toBe(200)
  })

  it("a lone UTF-16 surrogate anywhere is 400, never stored or replaced", async () => {
    const lone = ["\ud800", "a\udc00b", "x\ud83d"]
    for (const bad of lone) {
      for (const field of ["organizationId", "boardId", "title", "content"] as const) {
        expectInvalid(await send({ ...feedback, title: "Surrogate", [field]: bad }), field)
      }
      expectInvalid(await send({ ...feedback, title: "Surrogate", metadata: { k: bad } }), "metadata.k")
      const key = await send({ ...feedback, title: "Surrogate", metadata: { [bad]: "v" } })
      expect(key.status).toBe(400)
      expect(key.body).toEqual({ _tag: "DataValidationError", message: "metadata: Expected keys without lone UTF-16 surrogates" })
      expectInvalid(await postJson(`${server.api}/suggestions`, { ...suggestions, content: bad }), "content")
    }
    expect(await server.db.query((sql) => sql`SELECT id FROM posts WHERE title = 'Surrogate'`)).toEqual([])
    // A pair is one character, and fine.
    expect((await send({ ...feedback, title: "Pair \ud83d\ude00", metadata: { "\ud83d\ude00": "\ud83d\ude00" } })).status).toBe(200)
  })

  it("a refused request stores nothing", async () => {
    await send({ ...feedback, title: "Never stored", metadata: metadataOf(21) })
    const rows = await server.db.query((sql) => sql`SELECT id FROM posts WHERE title = 'Never stored'`)
    expect(rows).toEqual([])
  })
})
