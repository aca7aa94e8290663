import SwaggerParser from "@apidevtools/swagger-parser"
import { Option } from "effect"
import { type IncomingHttpHeaders, request } from "node:http"
import { brotliDecompressSync, gunzipSync } from "node:zlib"
import { beforeAll, describe, expect, it } from "vitest"
import { launchChromium } from "./support/browser.js"
import { getJson, startServer, useServer } from "./support/server.js"

const server = useServer(() => startServer())

const schemaOf = (doc: any, ref: { $ref?: string } & Record<string, unknown>) =>
  ref.$ref ? doc.components.schemas[ref.$ref.split("/").pop()!] : ref

describe("GET /docs/openapi.json", () => {
  let doc: any
  beforeAll(async () => {
    const res = await getJson(`${server.origin}/docs/openapi.json`)
    expect(res.status).toBe(200)
    doc = res.body
  })

  it("has this server as its server when PUBLIC_URL is not set: `/` (decision 0035)", () => {
    expect(doc.servers).toEqual([{ url: "/", description: expect.stringContaining("PUBLIC_URL is not set") }])
  })

  it("is a valid OpenAPI 3.x document", async () => {
    expect(doc.openapi).toMatch(/^3\./)
    await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toBeDefined()
  })

  it("describes every route", () => {
    expect(Object.keys(doc.paths).sort()).toEqual([
      "/api/widget/v1/boards", "/api/widget/v1/feedback", "/api/widget/v1/suggestions", "/api/widget/v1/updates", "/health"
    ])
    expect(Object.keys(doc.paths["/api/widget/v1/feedback"])).toEqual(["post"])
    expect(Object.keys(doc.paths["/api/widget/v1/boards"])).toEqual(["get"])
  })

  it("shows every field limit", () => {
    const feedback = schemaOf(doc, doc.paths["/api/widget/v1/feedback"].post.requestBody.content["application/json"].schema)
    expect(feedback.properties.title.maxLength).toBe(200)
    expect(feedback.properties.content.maxLength).toBe(20_000)
    expect(feedback.properties.token.maxLength).toBe(8_192)
    expect(feedback.properties.metadata.maxProperties).toBe(20)
    expect(feedback.properties.metadata.additionalProperties.maxLength).toBe(500)
    expect(feedback.properties.metadata.propertyNames).toEqual({ type: "string", maxLength: 64, description: "A key: At most 64 characters." })
    expect(feedback.required.sort()).toEqual(["boardId", "content", "organizationId", "title"])
    // Unknown fields are ignored, not refused.
    expect(feedback.additionalProperties).toBeUndefined()
    const suggestions = schemaOf(doc, doc.paths["/api/widget/v1/suggestions"].post.requestBody.content["application/json"].schema)
    expect(suggestions.properties.title.maxLength).toBe(200)
    expect(suggestions.properties.content.maxLength).toBe(20_000)
    // Identifiers, in bodies and in the query (decision 0025).
    for (const body of [feedback, suggestions]) {
      for (const field of ["organizationId", "boardId"]) expect([field, body.properties[field].maxLength]).toEqual([field, 200])
    }
    for (const path of ["/api/widget/v1/boards", "/api/widget/v1/updates"]) {
      const organizationId = doc.paths[path].get.parameters.find((p: any) => p.name === "organizationId")
      expect([path, organizationId.in, organizationId.schema.maxLength]).toEqual([path, "query", 200])
    }
    expect(suggestions.additionalProperties).toBeUndefined()
    expect(doc.paths["/api/widget/v1/suggestions"].post.responses["200"].content["application/json"].schema.maxItems).toBe(5)
  })

  it("says which answer fields are plain text to escape, and that only Update.content is HTML", () => {
    const schemas = doc.components.schemas
    const plain = [["SuggestionMatch", "title"], ["SuggestionMatch", "excerpt"], ["CreatedPost", "title"], ["Update", "title"],
      ["Update", "excerpt"], ["Board", "name"]] as const
    for (const [schema, field] of plain) {
      expect(schemas[schema].properties[field].description).toMatch(/plain text, not HTML\. Escape it/)
    }
    expect(schemas.Update.properties.content.description).toMatch(/^HTML, sanitized by the server/)
  })

  it("declares every error response with its _tag", () => {
    const expected: Record<string, Record<string, string>> = {
      "/api/widget/v1/suggestions": { 400: "DataValidationError", 429: "RateLimitExceededError", 500: "InternalServerError", 503: "RateLimitUnavailableError" },
      "/api/widget/v1/feedback": { 400: "DataValidationError", 401: "UnauthorizedError", 404: "NotFoundError", 429: "RateLimitExceededError", 500: "InternalServerError", 503: "RateLimitUnavailableError" },
      "/api/widget/v1/boards": { 400: "DataValidationError", 429: "RateLimitExceededError", 500: "InternalServerError", 503: "RateLimitUnavailableError" },
      "/api/widget/v1/updates": { 400: "DataValidationError", 429: "RateLimitExceededError", 500: "InternalServerError", 503: "RateLimitUnavailableError" }
    }
    for (const [path, errors] of Object.entries(expected)) {
      const operation = Object.values(doc.paths[path])[0] as any
      for (const [status, tag] of Object.entries(errors)) {
        const schema = schemaOf(doc, operation.responses[status].content["application/json"].schema)
        expect(schema.properties._tag.enum ?? [schema.properties._tag.const]).toEqual([tag])
      }
    }
    // /health takes no input and turns every failure into 503.
    expect(Object.keys(doc.paths["/health"].get.responses).sort()).toEqual(["200", "503"])
    const internal = schemaOf(doc, doc.paths["/health"].get.responses["503"].content["application/json"].schema)
    expect(internal.properties._tag.enum ?? [internal.properties._tag.const]).toEqual(["InternalServerError"])
  })
})

describe("the feedback.post.created webhook in GET /docs/openapi.json", () => {
  it("is in the top-level webhooks map, with its body schema, the signature headers and the answers", async () => {
    const doc = (await getJson(`${server.origin}/docs/openapi.json`)).body
    expect(doc.openapi).toMatch(/^3\.1\./)
    expect(Object.keys(doc.webhooks)).toEqual(["feedback.post.created"])
    const operation = doc.webhooks["feedback.post.created"].post
    expect(operation.parameters.map((p: any) => [p.name, p.in, p.required])).toEqual([
      ["webhook-id", "header", true],
      ["webhook-timestamp", "header", true],
      ["webhook-signature", "header", true]
    ])
    expect(Object.keys(operation.responses).sort()).toEqual(["2XX", "408", "429", "5XX", "default"])
    const event = schemaOf(doc, operation.requestBody.content["application/json"].schema)
    expect(event.required).toEqual(["type", "timestamp", "data"])
    expect(event.properties.type.enum).toEqual(["feedback.post.created"])
    const data = schemaOf(doc, event.properties.data)
    expect(data.required).toEqual(["id", "slug", "title", "boardId", "organizationId", "createdAt", "statusId", "contactId", "metadata"])
    expect(data.properties.contactId.anyOf).toEqual([{ type: "string" }, { type: "null" }])
    expect(data.properties.metadata).toEqual({ type: "object", additionalProperties: { type: "string" } })
  })
})

describe("rate-limit headers in GET /docs/openapi.json", () => {
  it("are documented on every widget response, with Retry-After on 429 and 503", async () => {
    const doc = (await getJson(`${server.origin}/docs/openapi.json`)).body
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const operation of Object.values<any>(item)) {
        for (const [status, response] of Object.entries<any>(operation.responses)) {
          const headers = Object.keys(response.headers ?? {}).sort()
          if (!path.startsWith("/api/widget/v1")) expect(headers).toEqual([])
          else if (status === "503") expect(headers).toEqual(["Retry-After"])
          else if (status === "429") expect(headers).toEqual(["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After"])
          else if (cacheable(path) && (status === "200" || status === "304")) {
            expect(headers).toEqual(["Cache-Control", "ETag", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"])
          } else expect(headers).toEqual(["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"])
        }
      }
    }
  })
})

const cacheable = (path: string) => path === "/api/widget/v1/boards" || path === "/api/widget/v1/updates"

describe("conditional GETs in GET /docs/openapi.json", () => {
  it("take If-None-Match on /boards and /updates and answer 304, and nowhere else", async () => {
    const doc = (await getJson(`${server.origin}/docs/openapi.json`)).body
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const operation of Object.values<any>(item)) {
        const header = (operation.parameters ?? []).find((p: any) => p.in === "header" && p.name === "If-None-Match")
        expect([path, header !== undefined, "304" in operation.responses]).toEqual([path, cacheable(path), cacheable(path)])
      }
    }
    expect(doc.paths["/api/widget/v1/boards"].get.responses["304"].content).toBeUndefined()
  })
})

/** The reference's operations, as the page must show them from its first paint. */
const summaries = [
  "Suggest similar public posts for a draft",
  "Create a feedback post on a public board",
  "List the organization's public boards",
  "List published changelog entries, newest first",
  "Liveness and database reachability"
]

describe("GET /docs", () => {
  it("serves HTML whose scripts and styles all come from this server", async () => {
    const res = await fetch(`${server.origin}/docs`)
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toMatch(/^text\/html/)
    const html = await res.text()
    const external = [...html.matchAll(/<(?:script|link|img)\b[^>]*\b(?:src|href)\s*=\s*["']?(?:https?:)?\/\//gi)]
    expect(external).toEqual([])
    expect(html).toMatch(/withDefaultFonts["']?\s*:\s*false/)
  })

  it("is small, plainly titled, and preloads what it needs: the document and Scalar's bundle, run once the page is parsed", async () => {
    const html = await (await fetch(`${server.origin}/docs`)).text()
    // It was 3.2 MB with the bundle inlined, and blank until all of it had run (issue 29).
    expect(html.length).toBeLessThan(32 * 1024)
    expect(html.match(/<title>([^<]*)<\/title>/)?.[1]).toBe("Hearken widget API reference")
    const script = html.match(/"(\/docs\/scalar\.js\?v=[0-9a-f]{16})"/)?.[1]
    expect(script).toBeDefined()
    expect(html).toContain(`<link rel="preload" href="/docs/openapi.json" as="fetch" crossorigin="anonymous">`)
    expect(html).toContain(`<link rel="preload" href="${script}" as="script">`)
    // Nothing runs before the reference is on screen: the head holds no script, the body one module script (deferred).
    expect(html.slice(0, html.indexOf("</head>"))).not.toMatch(/<script/)
    expect([...html.matchAll(/<script\b[^>]*>/g)].map((m) => m[0])).toEqual([`<script type="module">`])
    for (const summary of summaries) expect(html).toContain(summary.replace(/'/g, "&#39;"))
    const bundle = await fetch(`${server.origin}${script}`)
    expect(bundle.status).toBe(200)
    expect(bundle.headers.get("content-type")).toBe("text/javascript; charset=utf-8")
    expect(bundle.headers.get("cache-control")).toBe("public, max-age=31536000, immutable")
    // Rate-limited with the page and the document, one budget for the three.
    expect(bundle.headers.get("ratelimit-limit")).toMatch(/^\d+$/)
    expect(bundle.headers.get("ratelimit-limit")).toBe((await fetch(`${server.origin}/docs`)).headers.get("ratelimit-limit"))
    expect((await bundle.text()).length).toBeGreaterThan(1_000_000)
  })

  it("shows the reference without JavaScript: every operation, the title, the link to the document", async () => {
    const browser = await launchChromium()
    try {
      const context = await browser.newContext({ javaScriptEnabled: false })
      const page = await context.newPage()
      await page.goto(`${server.origin}/docs`, { waitUntil: "load" })
      for (const summary of summaries) await expect(page.getByText(summary).first().isVisible()).resolves.toBe(true)
      expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Hearken widget API")
      expect(await page.getByRole("link", { name: "/docs/openapi.json" }).getAttribute("href")).toBe("/docs/openapi.json")
    } finally {
      await browser.close()
    }
  })

  it("paints the reference before Scalar's bundle has run, then Scalar's, with no control that points at a hosted service", async () => {
    const browser = await launchChromium()
    try {
      const page = await browser.newPage()
      const requests: Array<string> = []
      page.on("request", (request) => requests.push(request.url()))
      // On localhost, where Scalar shows its "Developer Tools / Share / Generate SDKs" bar unless told not to.
      const origin = server.origin.replace("127.0.0.1", "localhost")
      await page.goto(`${origin}/docs`, { waitUntil: "load" })
      await page.getByText("Download OpenAPI Document").first().waitFor({ timeout: 20_000 })
      await page.getByText("Create a feedback post on a public board").first().waitFor({ timeout: 20_000 })
      await page.waitForTimeout(500)
      const timing = await page.evaluate(() => ({
        firstContentfulPaint: performance.getEntriesByName("first-contentful-paint")[0]?.startTime,
        // The page marks the moment it mounts Scalar, after the bundle has run.
        scalar: performance.getEntriesByName("hearken:scalar")[0]?.startTime
      }))
      expect(timing.firstContentfulPaint).toBeDefined()
      expect(timing.scalar).toBeDefined()
      expect(timing.firstContentfulPaint!).toBeLessThan(timing.scalar!)
      // The document and the bundle were fetched once each: the preloads were used.
      expect(requests.filter((url) => url.includes("/docs/openapi.json"))).toEqual([`${origin}/docs/openapi.json`])
      expect(requests.filter((url) => url.includes("/docs/scalar.js"))).toEqual([expect.stringMatching(/\/docs\/scalar\.js\?v=[0-9a-f]{16}$/)])
      expect(requests.filter((url) => !url.startsWith(`${origin}/`) && !/^(data|blob):/.test(url))).toEqual([])
      expect(await page.title()).toBe("Hearken widget API reference")
      // No visible link or button leads off this server, and none of Scalar's hosted-service controls shows.
      const offSite = await page.evaluate(() =>
        [...document.querySelectorAll<HTMLElement>("a[href], [formaction], form[action]")]
          .filter((element) => element.checkVisibility())
          .map((element) => element.getAttribute("href") ?? element.getAttribute("formaction") ?? element.getAttribute("action") ?? "")
          .filter((href) => new URL(href, location.href).origin !== location.origin && !/^(data|blob|mailto):/.test(href))
      )
      expect(offSite).toEqual([])
      for (const control of ["Developer Tools", "Share", "Generate SDKs", "Open API Client", "Powered by Scalar", "Ask AI", "MCP"]) {
        expect([control, await page.getByText(control, { exact: true }).filter({ visible: true }).count()]).toEqual([control, 0])
      }
    } finally {
      await browser.close()
    }
  })

  it("renders in a browser with every other origin cut off, and asks for nothing outside", async () => {
    // Other hosts are cut off by the browser's resolver, not by intercepting requests (see launchChromium).
    const browser = await launchChromium()
    try {
      const page = await browser.newPage()
      const outside: Array<string> = []
      page.on("request", (request) => {
        const url = request.url()
        if (!(url.startsWith(`${server.origin}/`) || url.startsWith("data:") || url.startsWith("blob:"))) outside.push(url)
      })
      await page.goto(`${server.origin}/docs`, { waitUntil: "load" })
      await page.getByText("Create a feedback post on a public board").first().waitFor({ timeout: 20_000 })
      await page.waitForTimeout(500)
      if (process.env["DOCS_SCREENSHOT"]) await page.screenshot({ path: process.env["DOCS_SCREENSHOT"], fullPage: false })
      expect(outside).toEqual([])
    } finally {
      await browser.close()
    }
  })
})

/** One GET on a fresh connection, the body as the bytes sent (no decoding, unlike fetch). */
const getRaw = (url: string, acceptEncoding?: string) =>
  new Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
    request(url, { agent: false, headers: acceptEncoding === undefined ? {} : { "accept-encoding": acceptEncoding } }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }))
    }).on("error", reject).end()
  })

describe.each(["/docs", "/docs/scalar.js", "/docs/openapi.json", "/widget/widget.js", "/widget/"])("GET %s, precompressed", (path) => {
  it("answers br, gzip or identity as the client accepts, each decoding to the same bytes, with Vary and Content-Length", async () => {
    const identity = await getRaw(`${server.origin}${path}`, "identity")
    expect(identity.status).toBe(200)
    expect(identity.headers["content-encoding"]).toBeUndefined()
    const cases = [
      ["br", "br", brotliDecompressSync],
      ["gzip", "gzip", gunzipSync],
      ["gzip, deflate, br, zstd", "br", brotliDecompressSync],
      ["br;q=0, gzip;q=0.5", "gzip", gunzipSync],
      ["*", "br", brotliDecompressSync],
      ["gzip;q=0, br;q=0", undefined, (b: Buffer) => b],
      [undefined, undefined, (b: Buffer) => b]
    ] as const
    for (const [accept, encoding, decode] of cases) {
      const res = await getRaw(`${server.origin}${path}`, accept)
      expect([accept, res.status, res.headers["content-encoding"]]).toEqual([accept, 200, encoding])
      expect(res.headers["vary"]?.toLowerCase().split(/,\s*/)).toContain("accept-encoding")
      expect(res.headers["content-type"]).toBe(identity.headers["content-type"])
      expect(Number(res.headers["content-length"])).toBe(res.body.length)
      expect(decode(res.body).equals(identity.body)).toBe(true)
      if (encoding !== undefined) expect(res.body.length).toBeLessThan(identity.body.length)
    }
  })
})

describe("the /docs page built by npm run build", () => {
  it("is the page and the bundle the server answers, built for the document /docs/openapi.json serves", async () => {
    const { fingerprint, openApiJson, pageFile, scriptFile, servedJson, staticDir } = await import("../packages/server/src/docs/page.js")
    const StaticAsset = await import("../packages/server/src/edge/StaticAsset.js")
    const built = StaticAsset.read(`${staticDir}${pageFile}`, fingerprint(openApiJson()), "text/html; charset=utf-8")
    const bundle = StaticAsset.read(`${staticDir}${scriptFile}`, fingerprint(openApiJson()), "text/javascript; charset=utf-8")
    expect(built).toBeDefined()
    expect(bundle).toBeDefined()
    const served = await getRaw(`${server.origin}/docs`, "identity")
    expect(served.body.equals(built!.identity)).toBe(true)
    // The page names the bundle by the bundle's own fingerprint.
    expect(served.body.toString("utf8")).toContain(`/docs/scalar.js?v=${fingerprint(bundle!.identity.toString("utf8")).slice(0, 16)}"`)
    expect((await getRaw(`${server.origin}/docs/scalar.js`, "identity")).body.equals(bundle!.identity)).toBe(true)
    // The document is the API's, with the servers of this run (PUBLIC_URL unset here).
    const document = await getRaw(`${server.origin}/docs/openapi.json`, "identity")
    expect(document.body.toString("utf8")).toBe(servedJson(Option.none()))
    const { servers, ...rest } = JSON.parse(document.body.toString("utf8"))
    expect(servers).toHaveLength(1)
    expect(JSON.stringify(rest)).toBe(openApiJson())
  })

  it("is read only when it was built from the current document: missing or stale, it is none", async () => {
    const { mkdtemp, rm, writeFile } = await import("node:fs/promises")
    const { tmpdir } = await import("node:os")
    const { join } = await import("node:path")
    const StaticAsset = await import("../packages/server/src/edge/StaticAsset.js")
    const dir = await mkdtemp(join(tmpdir(), "hearken-static-"))
    try {
      const path = join(dir, "page.html")
      expect(StaticAsset.read(path, "abc", "text/html")).toBeUndefined()
      const asset = { identity: Buffer.from("<p>page</p>".repeat(100)), gzip: Buffer.from("gz"), br: undefined, headers: {} }
      StaticAsset.write(asset, path, "abc")
      const read = StaticAsset.read(path, "abc", "text/html")
      expect(read?.identity.equals(asset.identity)).toBe(true)
      expect(read?.gzip?.toString()).toBe("gz")
      expect(read?.br).toBeUndefined()
      expect(read?.headers).toEqual({ "content-type": "text/html", vary: "accept-encoding" })
      expect(StaticAsset.read(path, "another version", "text/html")).toBeUndefined()
      // An interrupted build leaves no fingerprint, so nothing half-written is served.
      await rm(`${path}.sha256`)
      expect(StaticAsset.read(path, "abc", "text/html")).toBeUndefined()
      await writeFile(`${path}.sha256`, "abc")
      expect(StaticAsset.read(path, "abc", "text/html")).toBeDefined()
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
