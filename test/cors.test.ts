import { describe, expect, it } from "vitest"
import { startServer, useServer } from "./support/server.js"

const server = useServer(() => startServer({
    PUBLIC_URL: "https://api.example.test",
    DASHBOARD_ORIGIN: "https://dashboard.acme.test",
    ROOT_DOMAIN: "example.test"
  }))

const boards = (origin?: string) =>
  fetch(`${server.api}/boards?organizationId=org_x`, { headers: origin === undefined ? {} : { origin } })

describe("CORS (spec §5, CONTRACT §4)", () => {
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

  it("answers a preflight with 204, the methods, the headers and a max-age", async () => {
    const res = await fetch(`${server.api}/feedback`, {
      method: "OPTIONS",
      headers: { origin: "https://shop.example.test", "access-control-request-method": "POST", "access-control-request-headers": "content-type" }
    })
    expect(res.status).toBe(204)
    expect(res.headers.get("access-control-allow-origin")).toBe("https://shop.example.test")
    expect(res.headers.get("access-control-allow-methods")).toBe("GET, POST, OPTIONS")
    expect(res.headers.get("access-control-allow-headers")).toBe("content-type,if-none-match")
    expect(res.headers.get("access-control-max-age")).toBe("600")
  })

  it("lets a widget on an allowed origin revalidate: If-None-Match allowed, ETag readable", async () => {
    const origin = "https://shop.example.test"
    const preflight = await fetch(`${server.api}/boards?organizationId=org_acme`, {
      method: "OPTIONS",
      headers: { origin, "access-control-request-method": "GET", "access-control-request-headers": "if-none-match" }
    })
    expect(preflight.headers.get("access-control-allow-headers")).toContain("if-none-match")
    const res = await fetch(`${server.api}/boards?organizationId=org_acme`, { headers: { origin } })
    expect(res.headers.get("access-control-expose-headers")?.split(",")).toContain("etag")
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
