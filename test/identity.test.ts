import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { generateKeyPair, SignJWT, type JWTPayload } from "jose"
import { baseFixture } from "./support/fixtures.js"
import { inMemoryServer, post, query } from "./support/inMemory.js"

const current = "acme-current-secret-0123456789abcdef0123"
const previous = "acme-previous-secret-0123456789abcdef012"
const otherSecret = "other-organization-secret-0123456789abcd"

const fixture = baseFixture()
fixture.organizations[0]!.jwtSecrets = [current, previous]
;(fixture.organizations[1] as Record<string, unknown>)["jwtSecrets"] = [otherSecret]

/**
 * The tests where time is the subject (exp, nbf, iat) run on the TestClock, at `T`, each as a client
 * address of its own (`TRUST_PROXY=1`): the rate limiter's buckets of the others are on the real clock.
 */
const server = inMemoryServer(fixture, { TRUST_PROXY: "1" })

const T = Date.parse("2026-05-01T00:00:00.000Z")
const now = () => Math.floor(T / 1000)
const onTestClock = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.andThen(TestClock.setTime(T), effect).pipe(Effect.provide(TestClock.layer()))
const key = (secret: string) => new TextEncoder().encode(secret)

/** A token for org_acme with the current secret unless told otherwise. */
const sign = (claims: JWTPayload = {}, options: { secret?: string; alg?: string; aud?: string | Array<string> | null } = {}) => Effect.promise(() => {
  const jwt = new SignJWT({ email: "alice@example.com", ...claims }).setProtectedHeader({ alg: options.alg ?? "HS256", typ: "JWT" })
  if (options.aud !== null) jwt.setAudience(options.aud ?? "org_acme")
  if (claims.iat === undefined) jwt.setIssuedAt()
  return jwt.sign(key(options.secret ?? current))
})

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")

const submit = (token: string | undefined, extra: Record<string, unknown> = {}, from = "203.0.113.1") =>
  post("feedback", {
    organizationId: "org_acme",
    boardId: "b_feat",
    title: "Identified feedback",
    content: "<p>hello</p>",
    ...(token === undefined ? {} : { token }),
    ...extra
  }, { "x-forwarded-for": from })

const contactOf = (postId: string) => Effect.gen(function*() {
  const [row] = yield* query((sql) => sql`SELECT c.id, c.external_id AS "externalId", c.email, c.name,
      c.avatar_url AS "avatarUrl", c.custom_fields AS "customFields", c.organization_id AS "organizationId"
    FROM posts p JOIN contacts c ON c.id = p.contact_id WHERE p.id = ${postId}`)
  return row as Record<string, unknown> | undefined
})

const expect401 = (token: string, message?: string, from?: string) => Effect.gen(function*() {
  const res = yield* submit(token, {}, from)
  expect(res.status).toBe(401)
  expect(res.body._tag).toBe("UnauthorizedError")
  if (message !== undefined) expect(res.body.message).toBe(message)
  for (const secret of [current, previous, otherSecret]) expect(JSON.stringify(res.body)).not.toContain(secret)
})

layer(server, { excludeTestServices: true })("identity tokens on POST /feedback", (it) => {
  it.effect("attaches the post to a contact upserted from a token signed with the current secret", () =>
    Effect.gen(function*() {
      const token = yield* sign({
        id: "user-1",
        name: "Alice",
        avatarUrl: "https://example.com/alice.png",
        customFields: { plan: "pro", seats: 3, admin: true, note: null },
        companies: [{ id: "co-1", name: "Acme Inc", customFields: { tier: "gold" } }, { id: 7 }]
      })
      const res = yield* submit(token)
      expect(res.status).toBe(200)
      expect(yield* contactOf(res.body.id)).toMatchObject({
        externalId: "user-1",
        email: "alice@example.com",
        name: "Alice",
        avatarUrl: "https://example.com/alice.png",
        customFields: { plan: "pro", seats: 3, admin: true, note: null },
        organizationId: "org_acme"
      })
      const companies = yield* query((sql) => sql`SELECT co.external_id AS "id", co.name, co.custom_fields AS "customFields"
        FROM contact_companies cc JOIN companies co ON co.id = cc.company_id JOIN posts p ON p.contact_id = cc.contact_id
        WHERE p.id = ${res.body.id} ORDER BY co.external_id`)
      expect(companies).toEqual([
        { id: "7", name: null, customFields: {} },
        { id: "co-1", name: "Acme Inc", customFields: { tier: "gold" } }
      ])
    }))

  it.effect("accepts a token signed with the previous secret (rotation)", () =>
    Effect.gen(function*() {
      const res = yield* submit(yield* sign({ id: "user-prev" }, { secret: previous }))
      expect(res.status).toBe(200)
      expect((yield* contactOf(res.body.id))?.["externalId"]).toBe("user-prev")
    }))

  it.effect("leaves a post without a token anonymous", () =>
    Effect.gen(function*() {
      const res = yield* submit(undefined)
      expect(res.status).toBe(200)
      expect(yield* contactOf(res.body.id)).toBeUndefined()
    }))

  it.effect("refuses a token signed with a wrong secret", () =>
    Effect.gen(function*() {
      yield* expect401(yield* sign({}, { secret: "a-completely-different-secret-0123456789" }), "token: signature does not match")
    }))

  it.effect("refuses a token of another organization, however its audience reads", () =>
    Effect.gen(function*() {
      yield* expect401(yield* sign({}, { secret: otherSecret }), "token: signature does not match")
      yield* expect401(yield* sign({}, { aud: "org_other" }), "token: audience must be the organizationId")
      const theirs = yield* sign({}, { secret: otherSecret, aud: "org_other" })
      yield* expect401(theirs)
    }))

  it.effect("refuses alg none, HS512 and RS256", () =>
    Effect.gen(function*() {
      yield* expect401(`${b64({ alg: "none", typ: "JWT" })}.${b64({ email: "a@example.com", aud: "org_acme" })}.`, "token: only HS256 is accepted")
      yield* expect401(yield* sign({}, { alg: "HS512" }), "token: only HS256 is accepted")
      const { privateKey } = yield* Effect.promise(() => generateKeyPair("RS256"))
      const rs256 = yield* Effect.promise(() =>
        new SignJWT({ email: "a@example.com" }).setProtectedHeader({ alg: "RS256" }).setAudience("org_acme").sign(privateKey))
      yield* expect401(rs256, "token: only HS256 is accepted")
    }))

  it.effect("requires the audience to be the organizationId, as a string or in an array", () =>
    Effect.gen(function*() {
      yield* expect401(yield* sign({}, { aud: null }), "token: audience must be the organizationId")
      const res = yield* submit(yield* sign({ id: "user-aud" }, { aud: ["something-else", "org_acme"] }))
      expect(res.status).toBe(200)
    }))

  it.effect("enforces exp with 60 s of tolerance (on the TestClock)", () =>
    onTestClock(Effect.gen(function*() {
      yield* expect401(yield* sign({ iat: now(), exp: now() - 120 }), "token: expired", "192.0.2.1")
      expect((yield* submit(yield* sign({ iat: now(), exp: now() - 30 }), {}, "192.0.2.1")).status).toBe(200)
    })))

  it.effect("enforces nbf with 60 s of tolerance (on the TestClock)", () =>
    onTestClock(Effect.gen(function*() {
      yield* expect401(yield* sign({ iat: now(), nbf: now() + 120 }), "token: not valid yet", "192.0.2.2")
      expect((yield* submit(yield* sign({ iat: now(), nbf: now() + 30 }), {}, "192.0.2.2")).status).toBe(200)
    })))

  it.effect("refuses an iat more than 60 s in the future (on the TestClock)", () =>
    onTestClock(Effect.gen(function*() {
      yield* expect401(yield* sign({ iat: now() + 120 }), "token: issued in the future", "192.0.2.3")
      expect((yield* submit(yield* sign({ iat: now() + 30 }), {}, "192.0.2.3")).status).toBe(200)
    })))

  it.effect("requires a valid email claim", () =>
    Effect.gen(function*() {
      const noEmail = yield* Effect.promise(() =>
        new SignJWT({ name: "x" }).setProtectedHeader({ alg: "HS256" }).setAudience("org_acme").sign(key(current)))
      yield* expect401(noEmail, "token: claims: email: is required")
      yield* expect401(yield* sign({ email: "not-an-address" }), "token: claims: email: Expected a valid email address")
      yield* expect401(yield* sign({ email: 42 }))
    }))

  it.effect("refuses ill-typed optional claims", () =>
    Effect.gen(function*() {
      yield* expect401(yield* sign({ avatarUrl: "javascript:alert(1)" }))
      yield* expect401(yield* sign({ customFields: { nested: { a: 1 } } }))
      yield* expect401(yield* sign({ companies: [{ name: "no id" }] }))
    }))

  it.effect("refuses claims that PostgreSQL could not store (U+0000) with 401, not 500", () =>
    Effect.gen(function*() {
      yield* expect401(yield* sign({ name: "A\u0000B" }), "token: claims: name: Expected a string without NUL (U+0000) characters")
      yield* expect401(yield* sign({ customFields: { "k\u0000": "v" } }), "token: claims: customFields: Expected keys without NUL (U+0000) characters")
      yield* expect401(yield* sign({ customFields: { k: "v\u0000" } }))
      yield* expect401(yield* sign({ companies: [{ id: "c\u0000" }] }))
    }))

  it.effect("refuses claims with a lone UTF-16 surrogate with 401: never a 500, never replaced", () =>
    Effect.gen(function*() {
      // JSON.stringify writes a lone surrogate as the escape \ud800, so the token carries it as it is.
      yield* expect401(yield* sign({ customFields: { k: "v\ud800" } }), "token: claims: customFields.k: Expected a string without lone UTF-16 surrogates")
      yield* expect401(yield* sign({ customFields: { "k\udc00": "v" } }), "token: claims: customFields: Expected keys without lone UTF-16 surrogates")
      yield* expect401(yield* sign({ name: "\ud83d" }))
      yield* expect401(yield* sign({ companies: [{ id: "c", name: "\udfff", customFields: { a: "b" } }] }))
      yield* expect401(yield* sign({ companies: [{ id: "c", customFields: { a: "\ud800" } }] }))
    }))

  it.effect("refuses every token for an organization without secrets", () =>
    Effect.gen(function*() {
      const token = yield* sign({}, { aud: "org_nostatus" })
      const res = yield* post("feedback", { organizationId: "org_nostatus", boardId: "b_nostatus", title: "x", content: "", token })
      expect(res.status).toBe(401)
      expect(res.body).toEqual({ _tag: "UnauthorizedError", message: "token: this organization accepts no identity tokens" })
    }))

  it.effect("refuses garbage", () =>
    Effect.gen(function*() {
      for (const garbage of ["garbage", "a.b.c", "....", "eyJhbGciOiJIUzI1NiJ9"]) {
        yield* expect401(garbage, "token: malformed")
      }
      // A well-formed header over a garbled payload fails on its signature first.
      yield* expect401(`${b64({ alg: "HS256" })}.%%%.abc`, "token: signature does not match")
    }))

  it.effect("accepts a valid token of exactly 8,192 characters and refuses 8,193 with 400", () =>
    Effect.gen(function*() {
      const padded = (length: number) => Effect.gen(function*() {
        // Base64url grows by 1 or 2 characters per byte, so vary two fields to land exactly.
        for (let pad = 5_800; pad < 6_300; pad++) {
          for (const name of ["a", "ab", "abc"]) {
            const token = yield* sign({ id: "user-long", name, pad: "x".repeat(pad) })
            if (token.length === length) return token
          }
        }
        return yield* Effect.die(new Error(`no token of length ${length}`))
      })
      const exact = yield* padded(8_192)
      expect(exact).toHaveLength(8_192)
      expect((yield* submit(exact)).status).toBe(200)
      const res = yield* submit(exact + "x")
      expect(res.status).toBe(400)
      expect(res.body).toEqual({ _tag: "DataValidationError", message: "token: Expected a string with at most 8192 code points" })
    }))

  it.effect("keys contacts by id, given as a number or as a string", () =>
    Effect.gen(function*() {
      const a = yield* submit(yield* sign({ id: 4242, email: "n1@example.com" }))
      const b = yield* submit(yield* sign({ id: "4242", email: "n2@example.com" }))
      const ca = yield* contactOf(a.body.id)
      const cb = yield* contactOf(b.body.id)
      expect(ca?.["id"]).toBe(cb?.["id"])
      expect(cb).toMatchObject({ externalId: "4242", email: "n2@example.com" })
    }))

  it.effect("keys contacts without an id by lower-cased email", () =>
    Effect.gen(function*() {
      const a = yield* submit(yield* sign({ email: "Bob@Example.com", name: "Bob" }))
      const b = yield* submit(yield* sign({ email: "bob@example.com" }))
      const ca = yield* contactOf(a.body.id)
      const cb = yield* contactOf(b.body.id)
      expect(ca?.["id"]).toBe(cb?.["id"])
      expect(cb).toMatchObject({ externalId: null, email: "bob@example.com", name: "Bob" })
    }))

  it.effect("updates name, avatar and email, and merges custom fields", () =>
    Effect.gen(function*() {
      yield* submit(yield* sign({ id: "merge-1", email: "old@example.com", name: "Old", customFields: { plan: "free", seats: 1 } }))
      const res = yield* submit(yield* sign({
        id: "merge-1", email: "new@example.com", name: "New", avatarUrl: "https://example.com/n.png",
        customFields: { plan: "pro", admin: true }
      }))
      expect(yield* contactOf(res.body.id)).toMatchObject({
        email: "new@example.com",
        name: "New",
        avatarUrl: "https://example.com/n.png",
        customFields: { plan: "pro", seats: 1, admin: true }
      })
      const rows = yield* query<{ count: number }>((sql) =>
        sql`SELECT count(*)::int AS count FROM contacts WHERE external_id = 'merge-1'`)
      expect(rows).toEqual([{ count: 1 }])
    }))

  it.effect("makes 20 concurrent first submissions by one person one contact with 20 posts", () =>
    Effect.gen(function*() {
      const tokens = yield* Effect.all(Array.from({ length: 20 }, () =>
        sign({ id: "racer", email: "racer@example.com", companies: [{ id: "race-co", name: "Race Co" }, { id: "race-co-2" }] })))
      const results = yield* Effect.all(tokens.map((token) => submit(token, { title: "Concurrent" })), { concurrency: "unbounded" })
      expect(results.map((r) => r.status)).toEqual(Array(20).fill(200))
      const [row] = yield* query<{ contacts: number; posts: number; companies: number; links: number }>((sql) => sql`SELECT
        (SELECT count(*)::int FROM contacts WHERE organization_id = 'org_acme' AND external_id = 'racer') AS contacts,
        (SELECT count(*)::int FROM posts p JOIN contacts c ON c.id = p.contact_id WHERE c.external_id = 'racer') AS posts,
        (SELECT count(*)::int FROM companies WHERE external_id IN ('race-co', 'race-co-2')) AS companies,
        (SELECT count(*)::int FROM contact_companies cc JOIN contacts c ON c.id = cc.contact_id WHERE c.external_id = 'racer') AS links`)
      expect(row).toEqual({ contacts: 1, posts: 20, companies: 2, links: 2 })
    }))

  it.effect("makes 20 concurrent first submissions by an email-only identity one contact", () =>
    Effect.gen(function*() {
      const tokens = yield* Effect.all(Array.from({ length: 20 }, (_, i) => sign({ email: i % 2 ? "Race@Example.com" : "race@example.com" })))
      const results = yield* Effect.all(tokens.map((token) => submit(token)), { concurrency: "unbounded" })
      expect(results.map((r) => r.status)).toEqual(Array(20).fill(200))
      const rows = yield* query((sql) => sql`SELECT id FROM contacts WHERE email_key = 'race@example.com'`)
      expect(rows).toHaveLength(1)
    }))
})
