import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { baseFixture } from "./support/fixtures.js"
import { get, inMemoryServer } from "./support/inMemory.js"

layer(inMemoryServer(baseFixture()), { excludeTestServices: true })("GET /boards", (it) => {
  it.effect("lists public boards only, ordered by createdAt then id, with exactly the spec's fields", () =>
    Effect.gen(function*() {
      const res = yield* get("boards?organizationId=org_acme")
      expect(res.status).toBe(200)
      expect(res.headers.get("content-type")).toMatch(/^application\/json/)
      expect(res.body).toEqual([
        { id: "b_bugs", name: "Bugs", slug: "bugs", organizationId: "org_acme",
          createdAt: "2026-01-01T00:00:00.000Z", updatedAt: "2026-01-01T00:00:00.000Z" },
        { id: "b_feat", name: "Feature requests", slug: "feature-requests", organizationId: "org_acme",
          createdAt: "2026-01-02T00:00:00.000Z", updatedAt: "2026-01-03T00:00:00.000Z" },
        { id: "b_same_time_a", name: "Same time A", slug: "same-time-a", organizationId: "org_acme",
          createdAt: "2026-01-05T00:00:00.000Z", updatedAt: "2026-01-05T00:00:00.000Z" },
        { id: "b_same_time_b", name: "Same time B", slug: "same-time-b", organizationId: "org_acme",
          createdAt: "2026-01-05T00:00:00.000Z", updatedAt: "2026-01-05T00:00:00.000Z" }
      ])
    }))

  it.effect("never shows a private board or another organization's board", () =>
    Effect.gen(function*() {
      const acme = yield* get("boards?organizationId=org_acme")
      const ids = acme.body.map((b: { id: string }) => b.id)
      expect(ids).not.toContain("b_private")
      expect(ids).not.toContain("b_other")
      const other = yield* get("boards?organizationId=org_other")
      expect(other.body.map((b: { id: string }) => b.id)).toEqual(["b_other"])
    }))

  it.effect("answers [] for an unknown organization", () =>
    Effect.gen(function*() {
      const res = yield* get("boards?organizationId=org_nobody")
      expect(res.status).toBe(200)
      expect(res.body).toEqual([])
    }))

  describe("refuses a bad organizationId with 400 DataValidationError", () => {
    it.effect.each([
      ["missing", "", "organizationId: is required"],
      ["empty", "?organizationId=", "organizationId: Expected a value with a length of at least 1"],
      ["repeated", "?organizationId=a&organizationId=b", "organizationId: Expected string"],
      ["NUL", "?organizationId=a%00b", "organizationId: Expected a string without NUL (U+0000) characters"]
    ] as const)("refuses a %s organizationId", ([_, query, message]) =>
      Effect.gen(function*() {
        const res = yield* get(`boards${query}`)
        expect(res.status).toBe(400)
        expect(res.body).toEqual({ _tag: "DataValidationError", message })
      }))
  })
})
