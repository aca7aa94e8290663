import { generateKeyPair, SignJWT, type JWTPayload } from "jose"
import { describe, expect, it } from "vitest"
import { baseFixture } from "./support/fixtures.js"
import { postJson, startSeededServer, useServer } from "./support/server.js"

const current = "acme-current-secret-0123456789abcdef0123"
const previous = "acme-previous-secret-0123456789abcdef012"
const otherSecret = "other-organization-secret-0123456789abcd"

const fixture = baseFixture()
fixture.organizations[0]!.jwtSecrets = [current, previous]
;(fixture.organizations[1] as Record<string, unknown>)["jwtSecrets"] = [otherSecret]

const server = useServer(() => startSeededServer(fixture))

const now = () => Math.floor(Date.now() / 1000)
const key = (secret: string) => new TextEncoder().encode(secret)

/** A token for org_acme with the current secret unless told otherwise. */
const sign = (claims: JWTPayload = {}, options: { secret?: string; alg?: string; aud?: string | Array<string> | null } = {}) => {
  const jwt = new SignJWT({ email: "alice@example.com", ...claims }).setProtectedHeader({ alg: options.alg ?? "HS256", typ: "JWT" })
  if (options.aud !== null) jwt.setAudience(options.aud ?? "org_acme")
  if (claims.iat === undefined) jwt.setIssuedAt()
  return jwt.sign(key(options.secret ?? current))
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")

const submit = (token: string | undefined, extra: Record<string, unknown> = {}) =>
  postJson(`${server.api}/feedback`, {
    organizationId: "org_acme",
    boardId: "b_feat",
    title: "Identified feedback",
    content: "<p>hello</p>",
    ...(token === undefined ? {} : { token }),
    ...extra
  })

const contactOf = async (postId: string) => {
  const [row] = await server.db.query((sql) => sql`SELECT c.id, c.external_id AS "externalId", c.email, c.name,
      c.avatar_url AS "avatarUrl", c.custom_fields AS "customFields", c.organization_id AS "organizationId"
    FROM posts p JOIN contacts c ON c.id = p.contact_id WHERE p.id = ${postId}`)
  return row as Record<string, unknown> | undefined
}

const expect401 = async (token: string, message?: string) => {
  const res = await submit(token)
  expect(res.status).toBe(401)
  expect(res.body._tag).toBe("UnauthorizedError")
  if (message !== undefined) expect(res.body.message).toBe(message)
  for (const secret of [current, previous, otherSecret]) expect(JSON.stringify(res.body)).not.toContain(secret)
}

describe("identity tokens on POST /feedback", () => {
  it("attaches the post to a contact upserted from a token signed with the current secret", async () => {
    const token = await sign({
      id: "user-1",
      name: "Alice",
      avatarUrl: "https://example.com/alice.png",
      customFields: { plan: "pro", seats: 3, admin: true, note: null },
      companies: [{ id: "co-1", name: "Acme Inc", customFields: { tier: "gold" } }, { id: 7 }]
    })
    const res = await submit(token)
    expect(res.status).toBe(200)
    expect(await contactOf(res.body.id)).toMatchObject({
      externalId: "user-1",
      email: "alice@example.com",
      name: "Alice",
      avatarUrl: "https://example.com/alice.png",
      customFields: { plan: "pro", seats: 3, admin: true, note: null },
      organizationId: "org_acme"
    })
    const companies = await server.db.query((sql) => sql`SELECT co.external_id AS "id", co.name, co.custom_fields AS "customFields"
      FROM contact_companies cc JOIN companies co ON co.id = cc.company_id JOIN posts p ON p.contact_id = cc.contact_id
      WHERE p.id = ${res.body.id} ORDER BY co.external_id`)
    expect(companies).toEqual([
      { id: "7", name: null, customFields: {} },
      { id: "co-1", name: "Acme Inc", customFields: { tier: "gold" } }
    ])
  })

  it("accepts a token signed with the previous secret (rotation)", async () => {
    const res = await submit(await sign({ id: "user-prev" }, { secret: previous }))
    expect(res.status).toBe(200)
    expect((await contactOf(res.body.id))?.["externalId"]).toBe("user-prev")
  })

  it("leaves a post without a token anonymous", async () => {
    const res = await submit(undefined)
    expect(res.status).toBe(200)
    expect(await contactOf(res.body.id)).toBeUndefined()
  })

  it("refuses a token signed with a wrong secret", async () => {
    await expect401(await sign({}, { secret: "a-completely-different-secret-0123456789" }), "token: signature does not match")
  })

  it("refuses a token of another organization, however its audience reads", async () => {
    await expect401(await sign({}, { secret: otherSecret }), "token: signature does not match")
    await expect401(await sign({}, { aud: "org_other" }), "token: audience must be the organizationId")
    const theirs = await sign({}, { secret: otherSecret, aud: "org_other" })
    await expect401(theirs)
  })

  it("refuses alg none, HS512 and RS256", async () => {
    await expect401(`${b64({ alg: "none", typ: "JWT" })}.${b64({ email: "a@example.com", aud: "org_acme" })}.`, "token: only HS256 is accepted")
    await expect401(await sign({}, { alg: "HS512" }), "token: only HS256 is accepted")
    const { privateKey } = await generateKeyPair("RS256")
    const rs256 = await new SignJWT({ email: "a@example.com" }).setProtectedHeader({ alg: "RS256" }).setAudience("org_acme").sign(privateKey)
    await expect401(rs256, "token: only HS256 is accepted")
  })

  it("requires the audience to be the organizationId, as a string or in an array", async () => {
    await expect401(await sign({}, { aud: null }), "token: audience must be the organizationId")
    const res = await submit(await sign({ id: "user-aud" }, { aud: ["something-else", "org_acme"] }))
    expect(res.status).toBe(200)
  })

  it("enforces exp with 60 s of tolerance", async () => {
    await expect401(await sign({ exp: now() - 120 }), "token: expired")
    expect((await submit(await sign({ exp: now() - 30 }))).status).toBe(200)
  })

  it("enforces nbf with 60 s of tolerance", async () => {
    await expect401(await sign({ nbf: now() + 120 }), "token: not valid yet")
    expect((await submit(await sign({ nbf: now() + 30 }))).status).toBe(200)
  })

  it("refuses an iat more than 60 s in the future", async () => {
    await expect401(await sign({ iat: now() + 120 }), "token: issued in the future")
    expect((await submit(await sign({ iat: now() + 30 }))).status).toBe(200)
  })

  it("requires a valid email claim", async () => {
    const noEmail = await new SignJWT({ name: "x" }).setProtectedHeader({ alg: "HS256" }).setAudience("org_acme").sign(key(current))
    await expect401(noEmail, "token: claims: email: is required")
    await expect401(await sign({ email: "not-an-address" }), "token: claims: email: Expected a valid email address")
    await expect401(await sign({ email: 42 }))
  })

  it("refuses ill-typed optional claims", async () => {
    await expect401(await sign({ avatarUrl: "javascript:alert(1)" }))
    await expect401(await sign({ customFields: { nested: { a: 1 } } }))
    await expect401(await sign({ companies: [{ name: "no id" }] }))
  })

  it("refuses claims that PostgreSQL could not store (U+0000) with 401, not 500", async () => {
    await expect401(await sign({ name: "A\u0000B" }), "token: claims: name: Expected a string without NUL (U+0000) characters")
    await expect401(await sign({ customFields: { "k\u0000": "v" } }), "token: claims: customFields: Expected keys without NUL (U+0000) characters")
    await expect401(await sign({ customFields: { k: "v\u0000" } }))
    await expect401(await sign({ companies: [{ id: "c\u0000" }] }))
  })

  it("refuses claims with a lone UTF-16 surrogate with 401: never a 500, never replaced", async () => {
    // JSON.stringify writes a lone surrogate as the escape \ud800, so the token carries it as it is.
    await expect401(await sign({ customFields: { k: "v\ud800" } }), "token: claims: customFields.k: Expected a string without lone UTF-16 surrogates")
    await expect401(await sign({ customFields: { "k\udc00": "v" } }), "token: claims: customFields: Expected keys without lone UTF-16 surrogates")
    await expect401(await sign({ name: "\ud83d" }))
    await expect401(await sign({ companies: [{ id: "c", name: "\udfff", customFields: { a: "b" } }] }))
    await expect401(await sign({ companies: [{ id: "c", customFields: { a: "\ud800" } }] }))
  })

  it("refuses every token for an organization without secrets", async () => {
    const token = await sign({}, { aud: "org_nostatus" })
    const res = await postJson(`${server.api}/feedback`, { organizationId: "org_nostatus", boardId: "b_nostatus", title: "x", content: "", token })
    expect(res.status).toBe(401)
    expect(res.body).toEqual({ _tag: "UnauthorizedError", message: "token: this organization accepts no identity tokens" })
  })

  it("refuses garbage", async () => {
    for (const garbage of ["garbage", "a.b.c", "....", "eyJhbGciOiJIUzI1NiJ9"]) {
      await expect401(garbage, "token: malformed")
    }
    // A well-formed header over a garbled payload fails on its signature first.
    await expect401(`${b64({ alg: "HS256" })}.%%%.abc`, "token: signature does not match")
  })

  it("accepts a valid token of exactly 8,192 characters and refuses 8,193 with 400", async () => {
    const padded = async (length: number) => {
      // Base64url grows by 1 or 2 characters per byte, so vary two fields to land exactly.
      for (let pad = 5_800; pad < 6_300; pad++) {
        for (const name of ["a", "ab", "abc"]) {
          const token = await sign({ id: "user-long", name, pad: "x".repeat(pad) })
          if (token.length === length) return token
        }
      }
      throw new Error(`no token of length ${length}`)
    }
    const exact = await padded(8_192)
    expect(exact).toHaveLength(8_192)
    expect((await submit(exact)).status).toBe(200)
    const res = await submit(exact + "x")
    expect(res.status).toBe(400)
    expect(res.body).toEqual({ _tag: "DataValidationError", message: "token: Expected a string with at most 8192 code points" })
  })

  it("keys contacts by id, given as a number or as a string", async () => {
    const a = await submit(await sign({ id: 4242, email: "n1@example.com" }))
    const b = await submit(await sign({ id: "4242", email: "n2@example.com" }))
    const ca = await contactOf(a.body.id)
    const cb = await contactOf(b.body.id)
    expect(ca?.["id"]).toBe(cb?.["id"])
    expect(cb).toMatchObject({ externalId: "4242", email: "n2@example.com" })
  })

  it("keys contacts without an id by lower-cased email", async () => {
    const a = await submit(await sign({ email: "Bob@Example.com", name: "Bob" }))
    const b = await submit(await sign({ email: "bob@example.com" }))
    const ca = await contactOf(a.body.id)
    const cb = await contactOf(b.body.id)
    expect(ca?.["id"]).toBe(cb?.["id"])
    expect(cb).toMatchObject({ externalId: null, email: "bob@example.com", name: "Bob" })
  })

  it("updates name, avatar and email, and merges custom fields", async () => {
    await submit(await sign({ id: "merge-1", email: "old@example.com", name: "Old", customFields: { plan: "free", seats: 1 } }))
    const res = await submit(await sign({
      id: "merge-1", email: "new@example.com", name: "New", avatarUrl: "https://example.com/n.png",
      customFields: { plan: "pro", admin: true }
    }))
    expect(await contactOf(res.body.id)).toMatchObject({
      email: "new@example.com",
      name: "New",
      avatarUrl: "https://example.com/n.png",
      customFields: { plan: "pro", seats: 1, admin: true }
    })
    const rows = await server.db.query<{ count: number }>((sql) =>
      sql`SELECT count(*)::int AS count FROM contacts WHERE external_id = 'merge-1'`)
    expect(rows).toEqual([{ count: 1 }])
  })

  it("makes 20 concurrent first submissions by one person one contact with 20 posts", async () => {
    const tokens = await Promise.all(Array.from({ length: 20 }, () =>
      sign({ id: "racer", email: "racer@example.com", companies: [{ id: "race-co", name: "Race Co" }, { id: "race-co-2" }] })))
    const results = await Promise.all(tokens.map((token) => submit(token, { title: "Concurrent" })))
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200))
    const [row] = await server.db.query<{ contacts: number; posts: number; companies: number; links: number }>((sql) => sql`SELECT
      (SELECT count(*)::int FROM contacts WHERE organization_id = 'org_acme' AND external_id = 'racer') AS contacts,
      (SELECT count(*)::int FROM posts p JOIN contacts c ON c.id = p.contact_id WHERE c.external_id = 'racer') AS posts,
      (SELECT count(*)::int FROM companies WHERE external_id IN ('race-co', 'race-co-2')) AS companies,
      (SELECT count(*)::int FROM contact_companies cc JOIN contacts c ON c.id = cc.contact_id WHERE c.external_id = 'racer') AS links`)
    expect(row).toEqual({ contacts: 1, posts: 20, companies: 2, links: 2 })
  })

  it("makes 20 concurrent first submissions by an email-only identity one contact", async () => {
    const tokens = await Promise.all(Array.from({ length: 20 }, (_, i) => sign({ email: i % 2 ? "Race@Example.com" : "race@example.com" })))
    const results = await Promise.all(tokens.map((token) => submit(token)))
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200))
    const rows = await server.db.query((sql) => sql`SELECT id FROM contacts WHERE email_key = 'race@example.com'`)
    expect(rows).toHaveLength(1)
  })
})
