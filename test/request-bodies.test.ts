import { SignJWT } from "jose"
import { describe, expect, it } from "vitest"
import { baseFixture } from "./support/fixtures.js"
import { postJson, startSeededServer, useServer } from "./support/server.js"

/**
 * How large and how elaborate a request body may be (docs/api.md: "Limits";
 * docs/decisions/0029-request-bodies-and-sockets.md): the size limit follows
 * the largest valid body, and a body nested deeper or holding more values than
 * a valid one needs is refused before it is parsed.
 */

const emoji = "\u{1F600}" // one code point, two UTF-16 units, 12 bytes as two `\u` escapes
const secret = "long-ids-secret-0123456789abcdef0123456789"
/** Identifiers of 200 characters, the most a stored one may have (each 6 bytes as an escape). */
const longId = (prefix: string) => prefix + "\u00e9".repeat(200 - prefix.length)
const orgId = longId("org_")
const boardId = longId("b_")

const fixture = baseFixture()
fixture.organizations.push({
  id: orgId,
  name: "Long identifiers",
  jwtSecrets: [secret],
  statuses: [{ id: "st_long", name: "Open", isDefault: true }],
  boards: [{ id: boardId, name: "Board", slug: "board", visibility: "public" }]
} as (typeof fixture.organizations)[number])

const server = useServer(() => startSeededServer(fixture))

const feedback = { organizationId: "org_acme", boardId: "b_feat", title: "Body shape", content: "<p>c</p>" }
const refused = (message: string) => ({ status: 400, body: { _tag: "DataValidationError", message } })
const send = async (endpoint: "feedback" | "suggestions", body: string) => {
  const res = await postJson(`${server.api}/${endpoint}`, body)
  return { status: res.status, body: res.body }
}
/** `feedback` with one more field, `x`, written as `json`. */
const withIgnored = (json: string) => `${JSON.stringify(feedback).slice(0, -1)},"x":${json}}`

/** Every character of `text` as a `\uXXXX` escape (an astral one as two). */
const escaped = (text: string) =>
  Array.from({ length: text.length }, (_, i) => `\\u${text.charCodeAt(i).toString(16).padStart(4, "0")}`).join("")
/** JSON with every string, keys included, written as escapes only. */
const escapedJson = (value: unknown): string =>
  typeof value === "string"
    ? `"${escaped(value)}"`
    : `{${Object.entries(value as Record<string, unknown>).map(([k, v]) => `${escapedJson(k)}:${escapedJson(v)}`).join(",")}}`

/** An identity token for the long-identifier organization, padded to `length` characters at most. */
const tokenOf = async (length: number) => {
  const sign = (pad: number) =>
    new SignJWT({ email: "longest@example.com", pad: "p".repeat(pad) }).setProtectedHeader({ alg: "HS256" })
      .setAudience(orgId).setIssuedAt().sign(new TextEncoder().encode(secret))
  let pad = Math.floor((length - (await sign(0)).length) * 3 / 4) - 4
  for (let token = await sign(pad); ; pad++) {
    const next = await sign(pad + 1)
    if (next.length > length) return token
    token = next
  }
}

describe("the size limit follows the largest valid body", () => {
  it("accepts the largest valid body with every character written as a \\u escape", async () => {
    const token = await tokenOf(8_192)
    expect(token.length).toBeGreaterThan(8_190)
    expect(token.length).toBeLessThanOrEqual(8_192)
    const title = emoji.repeat(200)
    const value = {
      organizationId: orgId,
      boardId,
      title,
      content: emoji.repeat(20_000),
      metadata: Object.fromEntries(
        Array.from({ length: 20 }, (_, i) => [String(i).padStart(2, "0") + emoji.repeat(62), emoji.repeat(500)])
      ),
      token
    }
    const body = escapedJson(value)
    // Three times the same body in raw UTF-8, under the 512 KiB limit.
    expect(Buffer.byteLength(JSON.stringify(value))).toBeLessThan(140_000)
    expect(Buffer.byteLength(body)).toBeGreaterThan(420_000)
    const res = await postJson(`${server.api}/feedback`, body)
    expect(res.status).toBe(200)
    expect({ title: res.body.title, organizationId: res.body.organizationId, boardId: res.body.boardId })
      .toEqual({ title, organizationId: orgId, boardId })
  }, 30_000)

  it("accepts a body of exactly 524288 bytes and refuses one byte more, naming the limit", async () => {
    const exactly = (bytes: number) => {
      const json = JSON.stringify(feedback)
      // White space is valid JSON anywhere between tokens.
      return `${json.slice(0, -1)}${" ".repeat(bytes - json.length)}}`
    }
    expect((await send("feedback", exactly(524_288))).status).toBe(200)
    expect(await send("feedback", exactly(524_289))).toEqual(refused("body: larger than 524288 bytes (512 KiB)"))
    expect(await send("suggestions", exactly(524_289))).toEqual(refused("body: larger than 524288 bytes (512 KiB)"))
  })
})

describe("a body nested deeper or holding more values than a valid one needs is refused before parsing", () => {
  it("8 levels pass, 9 are 400", async () => {
    // The body itself is the first level.
    expect((await send("feedback", withIgnored(`${"[".repeat(7)}${"]".repeat(7)}`))).status).toBe(200)
    expect(await send("feedback", withIgnored(`${"[".repeat(8)}${"]".repeat(8)}`)))
      .toEqual(refused("body: nested deeper than 8 levels"))
    expect(await send("suggestions", withIgnored(`[{"a":[{"b":[{"c":[{}]}]}]}]`)))
      .toEqual(refused("body: nested deeper than 8 levels"))
  })

  it("refuses 512 KiB of nested arrays in an ignored field", async () => {
    const depth = 260_000
    const body = withIgnored(`${"[".repeat(depth)}${"]".repeat(depth)}`)
    expect(Buffer.byteLength(body)).toBeLessThan(524_288)
    expect(await send("feedback", body)).toEqual(refused("body: nested deeper than 8 levels"))
  })

  it("1000 values pass, 1001 are 400", async () => {
    // The body's 5 members (`x` among them) and the elements of `x`, at any depth.
    const elements = (n: number) => `[${Array<string>(n).fill("[]").join(",")}]`
    expect((await send("feedback", withIgnored(elements(995)))).status).toBe(200)
    expect(await send("feedback", withIgnored(elements(996)))).toEqual(refused("body: more than 1000 values"))
    const metadata = Object.fromEntries(Array.from({ length: 996 }, (_, i) => [`k${i}`, "v"]))
    expect(await send("feedback", JSON.stringify({ ...feedback, metadata }))).toEqual(refused("body: more than 1000 values"))
    expect(await send("suggestions", withIgnored(`[${Array<string>(996).fill("1").join(",")}]`)))
      .toEqual(refused("body: more than 1000 values"))
  })

  it("counts no bracket, brace, comma or escaped quote inside a string", async () => {
    const text = "[{,\"\\".repeat(2_000)
    const body = JSON.stringify({ ...feedback, title: "[[[[[[[[[[", content: text, metadata: { "\\": "{{{{{{{{{{", "k\"[": "\\" } })
    const res = await send("feedback", body)
    expect(res.status).toBe(200)
  })
})
