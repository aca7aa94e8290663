import { describe, expect, it } from "vitest"
import { baseFixture } from "./support/fixtures.js"
import { getJson, startSeededServer, useServer } from "./support/server.js"

const server = useServer(() => startSeededServer(baseFixture()))

describe("GET /boards", () => {
  it("lists public boards only, ordered by createdAt then id, with exactly the spec's fields", async () => {
    const res = await getJson(`${server.api}/boards?organizationId=org_acme`)
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
  })

  it("never shows a private board or another organization's board", async () => {
    const acme = await getJson(`${server.api}/boards?organizationId=org_acme`)
    const ids = acme.body.map((b: { id: string }) => b.id)
    expect(ids).not.toContain("b_private")
    expect(ids).not.toContain("b_other")
    const other = await getJson(`${server.api}/boards?organizationId=org_other`)
    expect(other.body.map((b: { id: string }) => b.id)).toEqual(["b_other"])
  })

  it("answers [] for an unknown organization", async () => {
    const res = await getJson(`${server.api}/boards?organizationId=org_nobody`)
    expect(res.status).toBe(200)
    expect(res.body).toEqual([])
  })

  it.each([
    ["missing", "", "organizationId: is required"],
    ["empty", "?organizationId=", "organizationId: Expected a value with a length of at least 1"],
    ["repeated", "?organizationId=a&organizationId=b", "organizationId: Expected string"],
    ["NUL", "?organizationId=a%00b", "organizationId: Expected a string without NUL (U+0000) characters"]
  ])("refuses a %s organizationId with 400 DataValidationError", async (_, query, message) => {
    const res = await getJson(`${server.api}/boards${query}`)
    expect(res.status).toBe(400)
    expect(res.body).toEqual({ _tag: "DataValidationError", message })
  })
})
