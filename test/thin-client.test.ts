import { FeedbackRequest, HearkenApi, SuggestionsRequest } from "@hearken/api/effect"
import { type Answer, makeThinClient, type Payload, type Query, routes, type ServerError, type Success } from "@hearken/api/thin"
import type { Board, CreatedPost, SuggestionMatch, Update } from "@hearken/api/effect"
import { OpenApi } from "effect/http-api"
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { describe, expect, expectTypeOf, it } from "vitest"
import { baseFixture } from "./support/fixtures.js"
import { freePort } from "./support/net.js"
import { startSeededServer, useServer } from "./support/server.js"

const fixture = baseFixture()
fixture.organizations[0]!.updates = [
  { id: "u_1", title: "One", slug: "one", content: "<p>One</p>", publishedAt: "2026-01-01T00:00:00.000Z" }
]
// The spec's own limits (multiplier 1): the sixth suggestion in a minute is refused.
const server = useServer(() => startSeededServer(fixture, { RATE_LIMIT_MULTIPLIER: "1" }))

describe("the thin client's types come from the API definition", () => {
  it("takes and answers exactly the definition's shapes and error tags", () => {
    expectTypeOf<Payload<"feedback">>().toEqualTypeOf<typeof FeedbackRequest.Encoded>()
    expectTypeOf<Payload<"suggestions">>().toEqualTypeOf<typeof SuggestionsRequest.Encoded>()
    expectTypeOf<Query<"boards">>().toEqualTypeOf<{ readonly organizationId: string }>()
    expectTypeOf<Success<"boards">>().toEqualTypeOf<ReadonlyArray<typeof Board.Encoded>>()
    expectTypeOf<Success<"updates">>().toEqualTypeOf<ReadonlyArray<typeof Update.Encoded>>()
    expectTypeOf<Success<"suggestions">>().toEqualTypeOf<ReadonlyArray<typeof SuggestionMatch.Encoded>>()
    expectTypeOf<Success<"feedback">>().toEqualTypeOf<typeof CreatedPost.Encoded>()
    const middleware = ["DataValidationError", "InternalServerError", "RateLimitExceededError", "RateLimitUnavailableError"] as const
    expectTypeOf<ServerError<"feedback">["_tag"]>().toEqualTypeOf<(typeof middleware)[number] | "NotFoundError" | "UnauthorizedError">()
    expectTypeOf<ServerError<"boards">["_tag"]>().toEqualTypeOf<(typeof middleware)[number]>()
    expectTypeOf<Extract<Exclude<Answer<"suggestions">, { ok: true }>["error"], { _tag: "RateLimitExceededError" }>>()
      .toHaveProperty("retryAfterSeconds").toEqualTypeOf<number>()
  })

  it("calls every widget endpoint with the definition's method and path", () => {
    const spec = OpenApi.fromApi(HearkenApi) as { paths: Record<string, Record<string, unknown>> }
    const documented = Object.entries(spec.paths)
      .filter(([path]) => path.startsWith("/api/widget/v1/"))
      .flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`))
      .sort()
    expect(Object.values(routes).map((r) => `${r.method} ${r.path}`).sort()).toEqual(documented)
  })

  it("has no run-time dependency: the built module imports nothing", () => {
    const built = readFileSync(createRequire(import.meta.url).resolve("@hearken/api/thin"), "utf8")
    expect(built).not.toMatch(/^\s*import\s/m)
    expect(built).not.toMatch(/\brequire\(/)
  })
})

describe("the thin client against the real server", () => {
  const client = () => makeThinClient(server.origin)
  const draft = { organizationId: "org_acme", boardId: "b_feat", title: "Thin client", content: "<p>from the thin client</p>" }

  it("lists boards, and revalidates them with the tag (304)", async () => {
    const first = await client().boards({ organizationId: "org_acme" })
    expect(first.ok && "value" in first && first.value.map((b) => b.id)).toEqual(["b_bugs", "b_feat", "b_same_time_a", "b_same_time_b"])
    const etag = first.ok ? first.etag! : ""
    expect(await client().boards({ organizationId: "org_acme" }, { ifNoneMatch: etag })).toEqual({ ok: true, notModified: true, etag })
  })

  it("lists the changelog", async () => {
    const res = await client().updates({ organizationId: "org_acme" })
    expect(res.ok && "value" in res && res.value.map((u) => u.id)).toEqual(["u_1"])
  })

  it("creates a post once per Idempotency-Key", async () => {
    const a = await client().feedback(draft, { idempotencyKey: "thin-1" })
    const b = await client().feedback(draft, { idempotencyKey: "thin-1" })
    expect(a.ok).toBe(true)
    expect(b).toEqual(a)
  })

  it("gives errors as a union on _tag, with the server's message", async () => {
    const notFound = await client().feedback({ ...draft, boardId: "b_missing" })
    expect(notFound).toEqual({ ok: false, status: 404, error: { _tag: "NotFoundError", message: "boardId: no such board in this organization" } })
    const invalid = await client().feedback({ ...draft, title: "" })
    expect(invalid).toEqual({ ok: false, status: 400, error: { _tag: "DataValidationError", message: "title: Expected a title containing a visible character" } })
    const unauthorized = await client().feedback({ ...draft, token: "not-a-jwt" })
    expect(!unauthorized.ok && unauthorized.error._tag).toBe("UnauthorizedError")
  })

  it("carries Retry-After on 429", async () => {
    const answers = []
    for (let i = 0; i < 6; i++) answers.push(await client().suggestions({ ...draft, title: `draft ${i}` }))
    expect(answers.slice(0, 5).every((a) => a.ok)).toBe(true)
    const refused = answers[5]!
    expect(refused.ok).toBe(false)
    if (refused.ok) return
    expect(refused.status).toBe(429)
    expect(refused.error._tag).toBe("RateLimitExceededError")
    expect(refused.error._tag === "RateLimitExceededError" && refused.error.retryAfterSeconds).toBeGreaterThanOrEqual(1)
  })

  it("reports an unreachable server as a NetworkError instead of throwing", async () => {
    const res = await makeThinClient(`http://127.0.0.1:${await freePort()}`).boards({ organizationId: "org_acme" })
    expect(res.ok).toBe(false)
    expect(!res.ok && res.status).toBe(0)
    expect(!res.ok && res.error._tag).toBe("NetworkError")
  })
})
