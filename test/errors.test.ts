import { describe, expect, it } from "vitest"
import { baseFixture } from "./support/fixtures.js"
import { getJson, postJson, startSeededServer, useServer } from "./support/server.js"

const server = useServer(() => startSeededServer(baseFixture()))

const leaks = /at .*\.(js|ts):\d+|SELECT|INSERT|relation "|postgres|stack|Error:/i

describe("error edges", () => {
  it.each(["/nope", "/api/widget/v1", "/api/widget/v1/boards/extra", "/api/widget/v2/boards?organizationId=x"])(
    "answers an unknown route %s with a JSON 404 NotFoundError",
    async (path) => {
      const res = await getJson(`${server.origin}${path}`)
      expect(res.status).toBe(404)
      expect(res.headers.get("content-type")).toMatch(/^application\/json/)
      expect(res.body).toEqual({ _tag: "NotFoundError" })
    }
  )

  it("answers a wrong method on a known path with a JSON 404", async () => {
    const res = await getJson(`${server.api}/feedback`)
    expect(res.status).toBe(404)
    expect(res.body).toEqual({ _tag: "NotFoundError" })
  })

  it("reports /health as ok while the database answers", async () => {
    const res = await getJson(`${server.origin}/health`)
    expect(res).toMatchObject({ status: 200, body: { status: "ok" } })
  })

  it("turns a database failure into a 500 with a message and nothing internal", async () => {
    await server.db.query((sql) => sql`ALTER TABLE boards RENAME TO boards_gone`)
    try {
      const res = await getJson(`${server.api}/boards?organizationId=org_acme`)
      expect(res.status).toBe(500)
      expect(res.body).toEqual({ _tag: "InternalServerError", message: "Internal server error" })
      const post = await postJson(`${server.api}/feedback`, { organizationId: "org_acme", boardId: "b_feat", title: "x", content: "" })
      expect(post.status).toBe(500)
      expect(JSON.stringify(post.body)).not.toMatch(leaks)
    } finally {
      await server.db.query((sql) => sql`ALTER TABLE boards_gone RENAME TO boards`)
    }
    expect((await getJson(`${server.api}/boards?organizationId=org_acme`)).status).toBe(200)
  })

  it("answers /health with 503 once the database is gone", async () => {
    await server.db.drop()
    const res = await getJson(`${server.origin}/health`)
    expect(res.status).toBe(503)
    expect(res.body).toEqual({ _tag: "ServiceUnavailableError", message: "database unreachable" })
  })
})
