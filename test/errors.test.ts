import { connect } from "node:net"
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

  it("answers a client that never finishes its headers with a JSON 408 after about 10 s", async () => {
    const { port } = new URL(server.origin)
    const started = performance.now()
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), "127.0.0.1", () => socket.write("GET /health HTTP/1.1\r\nHost: x\r\n"))
      let text = ""
      socket.on("data", (chunk) => (text += chunk))
      socket.on("close", () => resolve(text))
      socket.on("error", reject)
    })
    const seconds = (performance.now() - started) / 1000
    expect(reply.split("\r\n")[0]).toBe("HTTP/1.1 408 Request Timeout")
    expect(reply).toMatch(/\r\ncontent-type: application\/json\r\n/i)
    expect(JSON.parse(reply.slice(reply.indexOf("\r\n\r\n") + 4))).toEqual({
      _tag: "DataValidationError",
      message: "request: not received in time"
    })
    expect(seconds).toBeGreaterThan(9)
    expect(seconds).toBeLessThan(15)
  }, 20_000)

  it("answers /health with 503 and the spec's InternalServerError tag once the database is gone", async () => {
    await server.db.drop()
    const res = await getJson(`${server.origin}/health`)
    expect(res.status).toBe(503)
    expect(res.headers.get("content-type")).toMatch(/^application\/json/)
    expect(res.body).toEqual({ _tag: "InternalServerError", message: "database unreachable" })
  })
})
