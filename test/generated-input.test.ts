/**
 * Generated bad input through the real server (decision 0012).
 *
 * Valid requests are sampled from the API's own schemas (Effect's
 * `Arbitrary.schema`, seeded), half of them pointed at real boards; fast-check
 * then mutates each one: wrong types, nulls, deep nesting, huge numbers, lone
 * surrogates, `__proto__` and duplicate keys, truncated JSON, every content
 * type and encoding, invalid UTF-8, nested-tag and long-token contents.
 * 1,000 cases per endpoint, one at a time. Every answer must be 200 (or 304)
 * or a spec error with a JSON `_tag`, with a status the OpenAPI document
 * lists for the operation and a body its schema accepts; no 5xx, no reset
 * connection, and none slower than 1 s (a stall guard: hostile input used to
 * take seconds). FC_SEED replays a run; FC_RUNS changes the count.
 */
import SwaggerParser from "@apidevtools/swagger-parser"
import { FeedbackRequest, SuggestionsRequest } from "@hearken/api/effect"
import { Ajv2020 } from "ajv/dist/2020.js"
import { Arbitrary, Effect } from "effect"
import fc from "fast-check"
import { beforeAll, describe, expect, it } from "vitest"
import { baseFixture } from "./support/fixtures.js"
import { getJson, startSeededServer, useServer } from "./support/server.js"

const runs = Number(process.env["FC_RUNS"] ?? 1000)
const seed = Number(process.env["FC_SEED"] ?? 20261126)
const stallMs = 1_000
const noStatusesAnswer = JSON.stringify({ _tag: "InternalServerError", message: "The organization has no post statuses configured" })

const fixture = baseFixture()
fixture.organizations[0]!.updates = [
  { id: "u_1", title: "One", slug: "one", content: "<p>One <b>bold</b></p>", publishedAt: "2026-01-01T00:00:00.000Z" }
]
fixture.organizations[0]!.posts = Array.from({ length: 30 }, (_, i) => ({
  id: `p_${i}`, boardId: "b_feat", title: `Dark mode ${i}`, content: `<p>Please add a dark theme, variant ${i}</p>`
}))
const server = useServer(() => startSeededServer(fixture))

const spec = ["DataValidationError", "UnauthorizedError", "NotFoundError", "RateLimitExceededError", "InternalServerError",
  "RateLimitUnavailableError"]

// ---------------------------------------------------------------- what is sent

interface Case {
  readonly method: "GET" | "POST"
  readonly path: string
  readonly headers: Record<string, string>
  readonly body?: Uint8Array | undefined
  /** What was generated, for the failure report. */
  readonly label: string
}

const targets = [
  { organizationId: "org_acme", boardId: "b_feat" },
  { organizationId: "org_acme", boardId: "b_private" },
  { organizationId: "org_other", boardId: "b_other" },
  { organizationId: "org_nostatus", boardId: "b_nostatus" },
  { organizationId: "org_acme", boardId: "b_other" }
]

const lone = ["\ud800", "\udfff", "a\ud83d", "\ude00b"]

/** Contents that cost the most to sanitize or search: nested tags, one long word, tsquery syntax. */
const hostileContent = fc.oneof(
  fc.tuple(fc.constantFrom("<b>", "<div>", "<b><div>", "<ul><li>", "<table><tr><td>", "<a>", "<template>", "<svg><g>",
    "<p>", "<i><b><u><s>", "<b><i></b></i>x", "<select><option>", "<math><mi>"), fc.integer({ min: 1, max: 20_000 }))
    .map(([tag, n]) => tag.repeat(Math.max(1, Math.floor(Math.min(n, 20_000) / tag.length)))),
  fc.tuple(fc.constantFrom("a", "é", "!", "&", "x:*", "<->", "'", "\\", "😀"), fc.integer({ min: 1, max: 20_000 }))
    .map(([c, n]) => c.repeat(Math.max(1, Math.floor(n / c.length)))),
  fc.array(fc.constantFrom("dark", "mode", "&", "|", "!", "(", ")", ":*", "<->", "'", "\"", "not", "or", "and"), { maxLength: 400 })
    .map((words) => words.join(" ")),
  fc.string({ unit: "binary", maxLength: 2_000 })
)

/** Values of the wrong shape: anything JSON can say, deep nesting, huge numbers (as raw JSON). */
const wrongValue = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value)),
  fc.constantFrom("null", "true", "0", "-0", "1e400", "-1e400", "123456789012345678901234567890", "[]", "{}", "\"\"",
    "[null]", "{\"__proto__\":{\"polluted\":1}}"),
  fc.integer({ min: 1, max: 100_000 }).map((depth) => "[".repeat(depth) + "]".repeat(depth)),
  fc.integer({ min: 1, max: 100_000 }).map((depth) => "{\"a\":".repeat(depth) + "1" + "}".repeat(depth))
)

type Mutation =
  | { readonly kind: "none" }
  | { readonly kind: "replace"; readonly field: string; readonly raw: string }
  | { readonly kind: "delete"; readonly field: string }
  | { readonly kind: "surrogate"; readonly field: string; readonly lone: string }
  | { readonly kind: "content"; readonly content: string }
  | { readonly kind: "proto" }
  | { readonly kind: "duplicate"; readonly field: string; readonly raw: string }
  | { readonly kind: "truncate"; readonly at: number }
  | { readonly kind: "notObject"; readonly raw: string }

const mutation = (fields: ReadonlyArray<string>): fc.Arbitrary<Mutation> =>
  fc.oneof(
    { weight: 2, arbitrary: fc.constant({ kind: "none" as const }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant("replace" as const), field: fc.constantFrom(...fields), raw: wrongValue }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("delete" as const), field: fc.constantFrom(...fields) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("surrogate" as const), field: fc.constantFrom(...fields), lone: fc.constantFrom(...lone) }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant("content" as const), content: hostileContent }) },
    { weight: 1, arbitrary: fc.constant({ kind: "proto" as const }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("duplicate" as const), field: fc.constantFrom(...fields), raw: wrongValue }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("notObject" as const), raw: wrongValue }) }
  )

/** The body's JSON text after a mutation: built as text, so that duplicate keys and raw numbers survive. */
const applyMutation = (request: Record<string, unknown>, m: Mutation): string => {
  const entries = Object.entries(request).map(([k, v]) => [k, JSON.stringify(v)] as [string, string])
  const text = (list: Array<[string, string]>) => `{${list.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(",")}}`
  const set = (field: string, raw: string) => {
    const i = entries.findIndex(([k]) => k === field)
    if (i === -1) entries.push([field, raw])
    else entries[i] = [field, raw]
  }
  switch (m.kind) {
    case "none":
      return text(entries)
    case "replace":
      set(m.field, m.raw)
      return text(entries)
    case "delete":
      return text(entries.filter(([k]) => k !== m.field))
    case "surrogate": {
      const current = request[m.field]
      set(m.field, m.field === "metadata"
        ? JSON.stringify({ [`k${m.lone}`]: "v", v: `x${m.lone}` })
        : JSON.stringify(`${typeof current === "string" ? current : ""}${m.lone}`))
      return text(entries)
    }
    case "content":
      set("content", JSON.stringify(m.content))
      return text(entries)
    case "proto":
      return text([["__proto__", "{\"organizationId\":\"org_acme\",\"isAdmin\":true}"], ...entries])
    case "duplicate":
      return text([...entries, [m.field, m.raw]])
    case "truncate": {
      const whole = text(entries)
      return whole.slice(0, m.at % Math.max(1, whole.length))
    }
    case "notObject":
      return m.raw
  }
}

type Framing =
  | { readonly kind: "json"; readonly contentType: string | undefined; readonly encoding: string | undefined }
  | { readonly kind: "badUtf8"; readonly bytes: ReadonlyArray<number> }

const framing: fc.Arbitrary<Framing> = fc.oneof(
  { weight: 8, arbitrary: fc.constant({ kind: "json" as const, contentType: "application/json", encoding: undefined }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("json" as const),
      contentType: fc.constantFrom(undefined, "application/json; charset=utf-8", "application/json;charset=UTF-8",
        "APPLICATION/JSON", "text/plain", "text/plain;charset=UTF-8", "application/merge-patch+json", "application/vnd.api+json",
        "application/json; charset=iso-8859-1", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "",
        "application/json; charset=utf-16"),
      encoding: fc.constantFrom(undefined, undefined, "identity", "gzip", "br", "deflate", "x-unknown")
    })
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("badUtf8" as const), bytes: fc.constantFrom([0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xf8, 0x88, 0x80, 0x80, 0x80]) }) }
)

const postCase = (path: string, samples: ReadonlyArray<Record<string, unknown>>, fields: ReadonlyArray<string>) =>
  fc.record({
    sample: fc.constantFrom(...samples),
    target: fc.option(fc.constantFrom(...targets), { freq: 2 }),
    mutation: mutation(fields),
    framing
  }).map(({ framing: f, mutation: m, sample, target }): Case => {
    const request = { ...sample, ...(target ?? {}) }
    let body = Buffer.from(applyMutation(request, m), "utf8")
    const headers: Record<string, string> = {}
    if (f.kind === "json") {
      if (f.contentType !== undefined) headers["content-type"] = f.contentType
      if (f.encoding !== undefined) headers["content-encoding"] = f.encoding
    } else {
      headers["content-type"] = "application/json"
      const at = Math.max(1, body.indexOf(Buffer.from("\"title\":")) + 9)
      body = Buffer.concat([body.subarray(0, at), Buffer.from(f.bytes), body.subarray(at)])
    }
    return { method: "POST", path, headers, body, label: JSON.stringify({ target, framing: f, mutation: m }).slice(0, 500) }
  })

const getCase = (path: string) =>
  fc.record({
    query: fc.oneof(
      fc.constantFrom("organizationId=org_acme", "organizationId=org_other", "organizationId=nobody", "", "organizationId=",
        "organizationId=org_acme&organizationId=org_other", "organizationid=org_acme", "organizationId=%00", "organizationId=%ED%A0%80",
        "organizationId=%FF", "organizationId=%", "organizationId=__proto__", "__proto__=x&organizationId=org_acme",
        "organizationId[]=org_acme", "organizationId=org_acme%00", "organizationId=%F0%9F%98%80"),
      fc.string({ unit: "binary", maxLength: 300 }).map((s) => `organizationId=${encodeURIComponent(s)}`),
      fc.integer({ min: 1, max: 6_000 }).map((n) => `organizationId=${"a".repeat(n)}`)
    ),
    ifNoneMatch: fc.option(fc.oneof(fc.constantFrom("*", "W/\"x\"", "\"\"", ",,,", "W/"), fc.string({ maxLength: 200 }).filter((s) =>
      /^[\t\x20-\x7e]*$/.test(s))), { freq: 3 })
  }).map(({ ifNoneMatch, query }): Case => ({
    method: "GET",
    path: `${path}?${query}`,
    headers: ifNoneMatch === null ? {} : { "if-none-match": ifNoneMatch },
    label: JSON.stringify({ query: query.slice(0, 200), ifNoneMatch })
  }))

// ---------------------------------------------------------------- what must come back

let doc: any
let ajv: Ajv2020
const validators = new Map<string, ReturnType<Ajv2020["compile"]>>()

/** The statuses the document lists for an operation, and a validator for each JSON body. */
const documented = (path: string, method: string, status: number) => {
  const operation = doc.paths[path][method.toLowerCase()]
  const response = operation.responses[String(status)]
  if (response === undefined) return undefined
  const schema = response.content?.["application/json"]?.schema
  if (schema === undefined) return null
  const key = `${method} ${path} ${status}`
  if (!validators.has(key)) validators.set(key, ajv.compile(schema))
  return validators.get(key)!
}

const check = async (c: Case) => {
  const started = performance.now()
  let response: Response
  try {
    response = await fetch(`${server.api}${c.path}`, {
      method: c.method,
      headers: c.headers,
      ...(c.body === undefined ? {} : { body: new Uint8Array(c.body) as Uint8Array<ArrayBuffer> }),
      signal: AbortSignal.timeout(10_000)
    })
  } catch (error) {
    throw new Error(`no answer (${String(error)}) for ${c.label}`)
  }
  const text = await response.text()
  const ms = performance.now() - started
  const where = `${response.status} ${text.slice(0, 300)} for ${c.label}`
  // An organization without statuses gives 500 with a message (docs/api.md: "Errors"); that is its configuration, not the input.
  const noStatuses = response.status === 500 && text === noStatusesAnswer && c.label.includes("org_nostatus")
  if (response.status >= 500 && !noStatuses) throw new Error(`5xx: ${where}`)
  if (ms > stallMs) throw new Error(`answered in ${ms.toFixed(0)} ms: ${where}`)
  const path = `/api/widget/v1${c.path.split("?")[0]}`
  const validate = documented(path, c.method, response.status)
  if (validate === undefined) throw new Error(`status not in the OpenAPI document: ${where}`)
  if (response.status === 304) {
    if (text !== "") throw new Error(`304 with a body: ${where}`)
    return ms
  }
  let body: any
  try {
    body = JSON.parse(text)
  } catch {
    throw new Error(`not JSON: ${where}`)
  }
  if (response.status !== 200 && !spec.includes(body?._tag)) throw new Error(`no spec _tag: ${where}`)
  if (validate !== null && !validate(body)) throw new Error(`does not match the document (${ajv.errorsText(validate.errors)}): ${where}`)
  return ms
}

const sample = <S extends typeof FeedbackRequest | typeof SuggestionsRequest>(schema: S) =>
  Effect.runPromise(Arbitrary.sampleEffect(Arbitrary.schema(schema), { count: 200, seed })) as Promise<
    ReadonlyArray<Record<string, unknown>>
  >

describe(`generated input, ${runs} cases per endpoint (decision 0012)`, () => {
  beforeAll(async () => {
    const res = await getJson(`${server.origin}/docs/openapi.json`)
    doc = await SwaggerParser.dereference(res.body)
    ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: false })
  })

  const run = async (arbitrary: fc.Arbitrary<Case>) => {
    let slowest = { ms: 0, label: "" }
    let count = 0
    await fc.assert(
      fc.asyncProperty(arbitrary, async (c) => {
        const ms = await check(c)
        if (ms > slowest.ms) slowest = { ms, label: c.label.slice(0, 160) }
        count++
      }),
      { numRuns: runs, seed, endOnFailure: true }
    )
    console.log(`${count} cases, slowest answer ${slowest.ms.toFixed(0)} ms: ${slowest.label}`)
    expect(count).toBe(runs)
  }

  it("POST /feedback", async () => {
    await run(postCase("/feedback", await sample(FeedbackRequest), ["organizationId", "boardId", "title", "content", "metadata", "token"]))
  }, 300_000)

  it("POST /suggestions", async () => {
    await run(postCase("/suggestions", await sample(SuggestionsRequest), ["organizationId", "boardId", "title", "content"]))
  }, 300_000)

  it("GET /boards", async () => {
    await run(getCase("/boards"))
  }, 300_000)

  it("GET /updates", async () => {
    await run(getCase("/updates"))
  }, 300_000)
})
