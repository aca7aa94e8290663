import SwaggerParser from "@apidevtools/swagger-parser"
import { execFile } from "node:child_process"
import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { getJson, startServer, useServer } from "./support/server.js"

/**
 * Issue 29, "OpenAPI that generators like" (decision 0035): the document a
 * started server serves at `/docs/openapi.json`, as a generator sees it.
 * `openapi-typescript` (a devDependency) turns it into types, and `tsc` checks
 * a small client written against them, which then runs against the server.
 */
const run = promisify(execFile)
const bin = (name: string) => resolve("node_modules/.bin", name)
const publicUrl = "https://feedback.example.com"

const server = useServer(() => startServer({ PUBLIC_URL: `${publicUrl}/` }))

let doc: any
beforeAll(async () => {
  const res = await getJson(`${server.origin}/docs/openapi.json`)
  expect(res.status).toBe(200)
  doc = res.body
})

const operations = (d: any) =>
  Object.entries<any>(d.paths).flatMap(([path, item]) => Object.entries<any>(item).map(([method, op]) => ({ path, method, op })))

/** Every schema object in the document, with where it is. */
const schemas = (value: unknown, at = "#", out: Array<{ at: string; schema: any }> = []) => {
  if (value === null || typeof value !== "object") return out
  const record = value as Record<string, unknown>
  if (typeof record["type"] === "string" || "pattern" in record) out.push({ at, schema: record })
  for (const [key, child] of Object.entries(record)) schemas(child, `${at}/${key}`, out)
  return out
}

describe("GET /docs/openapi.json, for generators", () => {
  it("is valid OpenAPI", async () => {
    await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toBeDefined()
  })

  it("names components without `Encoded`, and every $ref names one of them", () => {
    const names = Object.keys(doc.components.schemas).sort()
    expect(names).toEqual([
      "Board", "CreatedPost", "DataValidationError", "FeedbackRequest", "Health", "InternalServerError", "NotFoundError",
      "PostCreatedData", "PostCreatedEvent", "RateLimitExceededError", "RateLimitUnavailableError", "SuggestionMatch",
      "SuggestionsRequest", "UnauthorizedError", "Update"
    ])
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1])
    expect(refs.length).toBeGreaterThan(20)
    expect(refs.filter((ref) => !names.includes(ref!))).toEqual([])
  })

  it("has operationIds that are identifiers, one per operation, verb first", () => {
    const ids = operations(doc).map(({ path, method, op }) => [`${method} ${path}`, op.operationId])
    expect(ids).toEqual([
      ["post /api/widget/v1/suggestions", "suggestPosts"],
      ["post /api/widget/v1/feedback", "createFeedback"],
      ["get /api/widget/v1/boards", "listBoards"],
      ["get /api/widget/v1/updates", "listUpdates"],
      ["get /health", "getHealth"]
    ])
    for (const [, id] of ids) expect(id).toMatch(/^[A-Za-z_][A-Za-z0-9_]*$/)
  })

  it("has PUBLIC_URL as its server, without the trailing slash", () => {
    expect(doc.servers).toEqual([{ url: publicUrl, description: "PUBLIC_URL" }])
    expect(Object.keys(doc).slice(0, 3)).toEqual(["openapi", "info", "servers"])
  })

  it("says every limit and pattern in words beside it", () => {
    const bounded = schemas(doc).filter(({ schema }) =>
      ["pattern", "maxLength", "maxProperties", "maxItems"].some((key) => key in schema)
    )
    // Header and query parameters carry their description on the parameter, beside the schema.
    const described = new Map<any, string>()
    for (const { op } of operations(doc)) {
      for (const parameter of op.parameters ?? []) if (parameter.description) described.set(parameter.schema, parameter.description)
    }
    const words = bounded.map(({ at, schema }) => [at, schema.description ?? described.get(schema)])
    expect(words.filter(([, description]) => description === undefined)).toEqual([])
    for (const { at, schema } of bounded) {
      const description: string = schema.description ?? described.get(schema)
      for (const key of ["maxLength", "maxProperties", "maxItems"]) {
        if (key in schema) expect([at, description]).toEqual([at, expect.stringContaining(schema[key].toLocaleString("en-US"))])
      }
      if ("pattern" in schema) expect(description).not.toContain(schema.pattern)
    }
    // The ones a reader most needs, in so many words.
    const feedback = doc.components.schemas.FeedbackRequest.properties
    expect(feedback.title.description).toMatch(/^At most 200 characters\. At least one of them must show/)
    expect(feedback.title.pattern).toBeDefined()
    expect(feedback.content.description).toBe("At most 20,000 characters.")
    const key = doc.paths["/api/widget/v1/feedback"].post.parameters.find((p: any) => p.name === "Idempotency-Key")
    expect(key.description).toMatch(/^1 to 255 visible ASCII characters \(codes 33 to 126/)
    expect(doc.paths["/api/widget/v1/boards"].get.parameters[0].schema.description).toBe("An identifier: 1 to 200 characters.")
  })
})

describe("openapi-typescript on GET /docs/openapi.json", () => {
  let dir = ""
  /** tsc's complaints about `file` in `dir` (strict, as this repository's code), or "" when it type-checks. */
  const typeCheck = (file: string) =>
    run(bin("tsc"), [
      "--noEmit", "--strict", "--exactOptionalPropertyTypes", "--noUncheckedIndexedAccess", "--skipLibCheck",
      "--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext", "--allowImportingTsExtensions",
      "--lib", "es2022,dom", file
    ], { cwd: dir }).then(() => "", (error: { stdout?: string; message: string }) => error.stdout || error.message)
  afterAll(async () => {
    if (dir !== "") await rm(dir, { recursive: true, force: true })
  })

  it("generates types that a client type-checks against, and a call made with them works", async () => {
    dir = await mkdtemp(join(tmpdir(), "hearken-openapi-"))
    await writeFile(join(dir, "package.json"), JSON.stringify({ type: "module" }))
    // As a user would, from the running server; the server's own origin stands in for PUBLIC_URL.
    await writeFile(join(dir, "openapi.json"), JSON.stringify({ ...doc, servers: [{ url: server.origin }] }))
    await run(bin("openapi-typescript"), [join(dir, "openapi.json"), "--output", join(dir, "api.d.ts")])
    await writeFile(join(dir, "usage.ts"), `
import type { components, operations, paths } from "./api.d.ts"

type Board = components["schemas"]["Board"]
type ListBoards = operations["listBoards"]
type FeedbackBody = operations["createFeedback"]["requestBody"]["content"]["application/json"]
type Refused = components["schemas"]["DataValidationError"]

/** A typed GET: the path names the operation, the query and the answer come from it. */
const get = async <P extends "/api/widget/v1/boards" | "/api/widget/v1/updates">(
  base: string,
  path: P,
  query: paths[P]["get"]["parameters"]["query"]
): Promise<{ status: number; body: paths[P]["get"]["responses"][200]["content"]["application/json"] | Refused }> => {
  const res = await fetch(base + path + "?" + new URLSearchParams(query).toString())
  return { status: res.status, body: await res.json() }
}

const base = ${JSON.stringify(server.origin)}
const boards = await get(base, "/api/widget/v1/boards", { organizationId: "org_none" } satisfies ListBoards["parameters"]["query"])
const list: Array<Board> | Refused = boards.body
const refused = await get(base, "/api/widget/v1/boards", { organizationId: "" })
const body: FeedbackBody = { organizationId: "org", boardId: "b", title: "Dark mode", content: "Please", metadata: { plan: "pro" } }
// @ts-expect-error: a feedback body needs a title
const untitled: FeedbackBody = { organizationId: "org", boardId: "b", content: "Please" }
// @ts-expect-error: a board has a name, not a title
const named: string = ({} as Board).title
// @ts-expect-error: metadata values are strings
const numeric: FeedbackBody = { ...body, metadata: { seats: 3 } }
// @ts-expect-error: no such path
await get(base, "/api/widget/v1/posts", { organizationId: "org" })
console.log(JSON.stringify({ boards: [boards.status, list], refused: [refused.status, (refused.body as Refused)._tag], unused: [untitled, named, numeric].length }))
`)
    expect(await typeCheck("usage.ts")).toBe("")
    // The same file runs as it is (Node strips the types).
    const ran = await run(process.execPath, [join(dir, "usage.ts")])
    expect(JSON.parse(ran.stdout)).toEqual({ boards: [200, []], refused: [400, "DataValidationError"], unused: 3 })
  }, 60_000)

  it("fails the type-check when a call does not match the types (the check above can fail)", async () => {
    await writeFile(join(dir, "wrong.ts"), `
import type { operations } from "./api.d.ts"
const body: operations["createFeedback"]["requestBody"]["content"]["application/json"] = {
  organizationId: "org", boardId: "b", title: "t", content: "c", extra: true
}
console.log(body)
`)
    const result = await typeCheck("wrong.ts")
    expect(result).toMatch(/^wrong\.ts\(4,\d+\): error TS2353: Object literal may only specify known properties, and 'extra'/)
  }, 60_000)
})
