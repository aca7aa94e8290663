import { describe, expect, it } from "vitest"
import { makeThinClient } from "@hearken/api/thin"
import { startServer, useServer } from "./support/server.js"

const server = useServer(() => startServer({
    PUBLIC_URL: "https://api.example.test",
    DASHBOARD_ORIGIN: "https://dashboard.acme.test",
    ROOT_DOMAIN: "example.test"
  }))

const boards = (origin?: string) =>
  fetch(`${server.api}/boards?organizationId=org_x`, { headers: origin === undefined ? {} : { origin } })

describe("CORS", () => {
  it.each([
    "https://dashboard.acme.test",
    "https://api.example.test",
    "https://shop.example.test",
    "https://a.b.c.example.test"
  ])("echoes the allowed origin %s with Vary: Origin", async (origin) => {
    const res = await boards(origin)
    expect(res.status).toBe(200)
    expect(res.headers.get("access-control-allow-origin")).toBe(origin)
    expect(res.headers.get("vary")).toMatch(/\bOrigin\b/i)
  })

  it.each([
    "https://evilexample.test",
    "https://example.test.evil.test",
    "https://example.test",
    "http://shop.example.test",
    "https://shop.example.test:8443.evil.test",
    "https://dashboard.acme.test.evil.test",
    "null",
    "https://shop.example.test/path"
  ])("gives the look-alike or disallowed origin %s no Access-Control-Allow-Origin", async (origin) => {
    const res = await boards(origin)
    expect(res.status).toBe(200)
    expect(res.headers.get("access-control-allow-origin")).toBeNull()
  })

  it("leaves requests without an Origin header alone", async () => {
    const res = await boards()
    expect(res.status).toBe(200)
    expect(res.headers.get("access-control-allow-origin")).toBeNull()
    expect(await res.json()).toEqual([])
  })

  const preflight = (path: string, method: string, requestHeaders: string, origin = "https://shop.example.test") =>
    fetch(`${server.api}${path}`, {
      method: "OPTIONS",
      headers: { origin, "access-control-request-method": method, "access-control-request-headers": requestHeaders }
    })
  const allowed = (res: Response) => res.headers.get("access-control-allow-headers")?.split(",") ?? []

  it("answers a preflight with 204, the methods, exactly the headers the clients send, and a max-age", async () => {
    const res = await preflight("/feedback", "POST", "content-type,idempotency-key")
    expect(res.status).toBe(204)
    expect(res.headers.get("access-control-allow-origin")).toBe("https://shop.example.test")
    expect(res.headers.get("access-control-allow-methods")).toBe("GET, POST, OPTIONS")
    expect(res.headers.get("access-control-allow-headers")).toBe("content-type,if-none-match,idempotency-key")
    expect(res.headers.get("access-control-max-age")).toBe("600")
  })

  it("lets a widget on DASHBOARD_ORIGIN post feedback with an Idempotency-Key (decision 0015)", async () => {
    const origin = "https://dashboard.acme.test"
    const res = await preflight("/feedback", "POST", "content-type,idempotency-key", origin)
    expect(res.status).toBe(204)
    expect(res.headers.get("access-control-allow-origin")).toBe(origin)
    expect(allowed(res)).toEqual(expect.arrayContaining(["content-type", "idempotency-key"]))
  })

  it("does not allow a header no client sends", async () => {
    for (const header of ["authorization", "x-api-key", "cookie"]) {
      const res = await preflight("/feedback", "POST", `content-type,${header}`)
      expect(res.status).toBe(204)
      expect(allowed(res)).not.toContain(header)
    }
  })

  it("allows every header the thin client sends, on every endpoint, and exposes every header it reads", async () => {
    const sent: Array<{ method: string; path: string; headers: Array<string> }> = []
    const client = makeThinClient("https://api.example.test", {
      fetch: async (input, init) => {
        const url = new URL(String(input))
        sent.push({ method: init!.method!, path: url.pathname, headers: Object.keys(init!.headers ?? {}).sort() })
        return fetch(`${server.origin}${url.pathname}${url.search}`, { ...init, headers: { ...init!.headers, origin: "https://shop.example.test" } })
      }
    })
    const boards = await client.boards({ organizationId: "org_x" }, { ifNoneMatch: "\"x\"" })
    await client.updates({ organizationId: "org_x" }, { ifNoneMatch: "\"x\"" })
    await client.suggestions({ organizationId: "org_x", boardId: "b_x", title: "Dark", content: "" })
    await client.feedback({ organizationId: "org_x", boardId: "b_x", title: "Dark", content: "" }, { idempotencyKey: "k-1" })
    expect(sent.map((s) => `${s.method} ${s.path} ${s.headers.join(",")}`)).toEqual([
      "GET /api/widget/v1/boards if-none-match",
      "GET /api/widget/v1/updates if-none-match",
      "POST /api/widget/v1/suggestions content-type",
      "POST /api/widget/v1/feedback content-type,idempotency-key"
    ])
    for (const { method, path, headers } of sent) {
      const res = await preflight(path.replace("/api/widget/v1", ""), method, headers.join(","))
      expect(res.status).toBe(204)
      expect(allowed(res)).toEqual(expect.arrayContaining(headers))
    }
    expect(boards.ok).toBe(true)
  })

  it("lets a widget revalidate: If-None-Match allowed on GET, and ETag and Retry-After (what the thin client reads) exposed", async () => {
    const res = await preflight("/boards?organizationId=org_acme", "GET", "if-none-match")
    expect(res.status).toBe(204)
    expect(allowed(res)).toContain("if-none-match")
    const answer = await boards("https://shop.example.test")
    expect(answer.headers.get("access-control-expose-headers")?.split(",")).toEqual(
      ["etag", "retry-after", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset", "x-trace-id"]
    )
  })

  it("answers a preflight from a disallowed origin without allowing it", async () => {
    const res = await fetch(`${server.api}/feedback`, {
      method: "OPTIONS",
      headers: { origin: "https://evilexample.test", "access-control-request-method": "POST" }
    })
    expect(res.headers.get("access-control-allow-origin")).toBeNull()
  })
})

describe("CORS with an http PUBLIC_URL (local work)", () => {
  const local = useServer(() => startServer({ PUBLIC_URL: "http://localhost:3000", ROOT_DOMAIN: "localtest.me" }))

  it("allows http subdomains too", async () => {
    for (const origin of ["http://app.localtest.me", "https://app.localtest.me", "http://localhost:3000"]) {
      const res = await fetch(`${local.api}/boards?organizationId=x`, { headers: { origin } })
      expect(res.headers.get("access-control-allow-origin")).toBe(origin)
    }
  })
})
