import { createServer, type Server } from "node:http"
import { connect } from "node:net"
import { brotliCompressSync, gzipSync } from "node:zlib"
import { afterAll, describe, expect, it } from "vitest"
import { install, prependAuxiliaryRequestListener } from "../packages/server/src/http/NodeErrors.js"
import { postsTitled as postsTitledIn } from "./support/database.js"
import { baseFixture } from "./support/fixtures.js"
import { freePort } from "./support/net.js"
import { testRedisUrl } from "./support/redis.js"
import { getJson, postJson, startServer, startSeededServer, type TestServer, useServer } from "./support/server.js"

const server = useServer(() => startSeededServer(baseFixture()))

const feedback = { organizationId: "org_acme", boardId: "b_feat", title: "Edge post", content: "" }
const suggestions = { organizationId: "org_acme", boardId: "b_feat", title: "Edge draft", content: "" }

const postsTitled = async (title: string) => (await postsTitledIn(server.db, title)).length

interface RawAnswer {
  readonly status: number
  readonly headers: Record<string, string>
  readonly text: string
  readonly body: any
}

/** Parses one HTTP/1.1 answer as it came off the socket (Content-Length or chunked). */
const parseAnswer = (raw: string): RawAnswer => {
  const end = raw.indexOf("\r\n\r\n")
  if (end === -1) throw new Error(`no complete answer: ${JSON.stringify(raw)}`)
  const [statusLine = "", ...lines] = raw.slice(0, end).split("\r\n")
  const headers = Object.fromEntries(lines.map((line) => {
    const colon = line.indexOf(":")
    return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()]
  }))
  let text = raw.slice(end + 4)
  if (headers["transfer-encoding"] === "chunked") {
    let decoded = ""
    for (let rest = text; ;) {
      const lineEnd = rest.indexOf("\r\n")
      const size = parseInt(rest.slice(0, lineEnd), 16)
      if (!(size > 0)) break
      decoded += rest.slice(lineEnd + 2, lineEnd + 2 + size)
      rest = rest.slice(lineEnd + 2 + size + 2)
    }
    text = decoded
  } else if (headers["content-length"] !== undefined) {
    expect(Buffer.byteLength(text)).toBe(Number(headers["content-length"]))
  }
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    body = undefined
  }
  return { status: Number(statusLine.split(" ")[1]), headers, text, body }
}

/** Splits what came off a socket into its answers, each framed by `Content-Length`. */
const parseAnswers = (raw: string): Array<RawAnswer> => {
  const answers: Array<RawAnswer> = []
  for (let rest = raw; rest.length > 0;) {
    const end = rest.indexOf("\r\n\r\n")
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(rest.slice(0, end))?.[1])
    if (end === -1 || !Number.isInteger(length) || rest.length < end + 4 + length) {
      throw new Error(`no complete answer: ${JSON.stringify(rest)}`)
    }
    answers.push(parseAnswer(rest.slice(0, end + 4 + length)))
    rest = rest.slice(end + 4 + length)
  }
  return answers
}

const answersIn = (raw: string) => {
  try {
    return parseAnswers(raw).length
  } catch {
    return 0
  }
}

/**
 * Writes `data` on a fresh connection and resolves with everything read until
 * the server closes it. A list is sent turn by turn: each request once the
 * ones before it are answered.
 */
const rawExchange = (port: number, data: string | Buffer | ReadonlyArray<string>, timeoutMs = 5_000) =>
  new Promise<string>((resolve, reject) => {
    const turns = typeof data === "string" || Buffer.isBuffer(data) ? [data] : [...data]
    let sent = 0
    const socket = connect(port, "127.0.0.1", () => socket.write(turns[sent++]!))
    let text = ""
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no close within ${timeoutMs} ms; read ${JSON.stringify(text.slice(0, 200))}`))
    }, timeoutMs)
    socket.setEncoding("utf8")
    socket.on("data", (chunk) => {
      text += chunk
      if (sent < turns.length && answersIn(text) === sent) socket.write(turns[sent++]!)
    })
    socket.on("close", () => {
      clearTimeout(timer)
      resolve(text)
    })
    socket.on("error", (error) => {
      clearTimeout(timer)
      reject(error)
    })
  })

/** Writes `data` on a fresh connection and resets it as soon as it is written. */
const sendAndReset = (data: string) =>
  new Promise<void>((resolve) => {
    const socket = connect(portOf(server), "127.0.0.1", () => socket.write(data, () => socket.resetAndDestroy()))
    socket.on("close", () => resolve())
    socket.on("error", () => {})
  })

const portOf = (s: TestServer) => Number(new URL(s.origin).port)
const raw = async (data: string | Buffer) => parseAnswer(await rawExchange(portOf(server), data))

/** A JSON error body with the spec's `_tag`, a message naming `field`, and the right media type. */
const expectJsonError = (answer: RawAnswer, status: number, tag: string, field: string) => {
  expect(answer.status).toBe(status)
  expect(answer.headers["content-type"]).toMatch(/^application\/json/)
  expect(answer.body).toEqual({ _tag: tag, message: expect.any(String) })
  expect(answer.body.message.startsWith(`${field}:`)).toBe(true)
}

describe.each([
  ["feedback", feedback],
  ["suggestions", suggestions]
] as const)("POST /%s Content-Type", (endpoint, base) => {
  const url = () => `${server.api}/${endpoint}`

  it.each([
    "application/merge-patch+json",
    "application/vnd.api+json",
    "text/plain",
    "text/plain;charset=UTF-8",
    "application/json-patch+json",
    "application/jsonx",
    "application/json; boundary=x"
  ])("refuses %s with 400 DataValidationError naming Content-Type", async (contentType) => {
    const title = `CT ${endpoint} ${contentType}`
    const res = await postJson(url(), { ...base, title }, { "content-type": contentType })
    expect(res.status).toBe(400)
    expect(res.headers.get("content-type")).toMatch(/^application\/json/)
    expect(res.body).toEqual({ _tag: "DataValidationError", message: "Content-Type: must be application/json" })
    expect(await postsTitled(title)).toBe(0)
  })

  it("refuses an untyped Blob body (no Content-Type, no CORS preflight) and creates nothing", async () => {
    const title = `Blob ${endpoint}`
    const res = await fetch(url(), {
      method: "POST",
      headers: { origin: "https://evil.example" },
      body: new Blob([JSON.stringify({ ...base, title })])
    })
    expect(res.status).toBe(400)
    expect(await res.json()).toEqual({ _tag: "DataValidationError", message: "Content-Type: must be application/json" })
    expect(await postsTitled(title)).toBe(0)
  })

  it("refuses a request with no Content-Type header at all, sent raw", async () => {
    const body = JSON.stringify(base)
    const answer = await raw(
      `POST /api/widget/v1/${endpoint} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
    )
    expectJsonError(answer, 400, "DataValidationError", "Content-Type")
  })

  it.each(["application/json; charset=iso-8859-1", "application/json; charset=utf-16", "application/json;charset=latin1"])(
    "refuses %s with 400 naming Content-Type's charset",
    async (contentType) => {
      const res = await postJson(url(), base, { "content-type": contentType })
      expect(res.status).toBe(400)
      expect(res.body).toEqual({ _tag: "DataValidationError", message: "Content-Type: charset must be utf-8" })
    }
  )

  it.each([
    "application/json",
    "application/json; charset=UTF-8",
    "Application/JSON;charset=utf-8",
    "application/json ;  Charset = \"utf-8\" "
  ])("accepts %s", async (contentType) => {
    const res = await postJson(url(), base, { "content-type": contentType })
    expect(res.status).toBe(200)
  })
})

describe("POST body encoding", () => {
  const json = { "content-type": "application/json" }

  it("refuses bytes that are not UTF-8 with 400 and creates nothing (no silent U+FFFD)", async () => {
    // "café" in Latin-1: 0xE9 alone is no UTF-8 sequence.
    const latin1 = Buffer.from(JSON.stringify({ ...feedback, title: "caf\u00e9 latin1" }), "latin1")
    const res = await fetch(`${server.api}/feedback`, { method: "POST", headers: json, body: latin1 })
    expect(res.status).toBe(400)
    expect(await res.json()).toEqual({ _tag: "DataValidationError", message: "body: not valid UTF-8" })
    expect(await postsTitled("caf\ufffd latin1")).toBe(0)
    // A truncated multi-byte sequence and a lone continuation byte inside a string.
    for (const bytes of [Buffer.from([0xe2, 0x82]), Buffer.from([0x80])]) {
      const body = Buffer.concat([Buffer.from(`{"organizationId":"org_acme","boardId":"b_feat","title":"x`), bytes, Buffer.from(`","content":""}`)])
      const bad = await fetch(`${server.api}/suggestions`, { method: "POST", headers: json, body })
      expect(bad.status).toBe(400)
      expect((await bad.json())._tag).toBe("DataValidationError")
    }
  })

  it("accepts real UTF-8, multi-byte characters included, and stores them as sent", async () => {
    const title = "caf\u00e9 \u65e5\u672c \ud83d\ude00"
    const res = await fetch(`${server.api}/feedback`, { method: "POST", headers: json, body: Buffer.from(JSON.stringify({ ...feedback, title })) })
    expect(res.status).toBe(200)
    expect(await postsTitled(title)).toBe(1)
  })

  it.each([
    ["gzip", gzipSync],
    ["br", brotliCompressSync],
    ["GZIP", gzipSync]
  ] as const)("refuses Content-Encoding %s with 400 naming Content-Encoding", async (encoding, compress) => {
    const title = `Compressed ${encoding}`
    const res = await fetch(`${server.api}/feedback`, {
      method: "POST",
      headers: { ...json, "content-encoding": encoding },
      body: compress(Buffer.from(JSON.stringify({ ...feedback, title })))
    })
    expect(res.status).toBe(400)
    const body = await res.json()
    expect(body._tag).toBe("DataValidationError")
    expect(body.message.startsWith("Content-Encoding:")).toBe(true)
    expect(await postsTitled(title)).toBe(0)
  })

  it("accepts Content-Encoding identity", async () => {
    const res = await postJson(`${server.api}/suggestions`, suggestions, { "content-encoding": "identity" })
    expect(res.status).toBe(200)
  })
})

describe("what Node's HTTP parser refuses, answered in JSON", () => {
  it("a Content-Length that is not a number: 400", async () => {
    const answer = await raw("POST /api/widget/v1/feedback HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n{}")
    expectJsonError(answer, 400, "DataValidationError", "Content-Length")
    expect(answer.headers["connection"]).toBe("close")
  })

  it.each(["2", "3"])("a second Content-Length (%s after 2): 400 naming the duplicate", async (second) => {
    const answer = await raw(`POST /api/widget/v1/feedback HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: ${second}\r\n\r\n{}`)
    expect(answer.status).toBe(400)
    expect(answer.body).toEqual({ _tag: "DataValidationError", message: "Content-Length: duplicate" })
  })

  it.each([
    ["Content-Length: 3\r\nTransfer-Encoding: chunked", "Transfer-Encoding: not allowed with Content-Length"],
    ["Transfer-Encoding: chunked\r\nContent-Length: 3", "Content-Length: not allowed with Transfer-Encoding"]
  ])("Content-Length with Transfer-Encoding (request smuggling, %j): 400 naming both", async (headers, message) => {
    const answer = await raw(`POST /api/widget/v1/feedback HTTP/1.1\r\nHost: x\r\n${headers}\r\n\r\n0\r\n\r\n`)
    expect(answer.status).toBe(400)
    expect(answer.body).toEqual({ _tag: "DataValidationError", message })
  })

  it("Transfer-Encoding: chunked twice: 400", async () => {
    const answer = await raw("POST /api/widget/v1/feedback HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
    expect(answer.status).toBe(400)
    expect(answer.body).toEqual({ _tag: "DataValidationError", message: "Transfer-Encoding: invalid" })
  })

  it("a malformed chunked body: 400", async () => {
    const answer = await raw(
      "POST /api/widget/v1/feedback HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"
    )
    expectJsonError(answer, 400, "DataValidationError", "body")
  })

  it("17 KB of headers: 431 with a JSON body", async () => {
    const answer = await raw(`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(17 * 1024)}\r\n\r\n`)
    expectJsonError(answer, 431, "DataValidationError", "headers")
  })

  it("Expect: 200-ok: 417 with a JSON body", async () => {
    const answer = await raw("GET /health HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\n\r\n")
    expectJsonError(answer, 417, "DataValidationError", "Expect")
  })

  it.each([
    ["garbage", "GARBAGE\r\n\r\n"],
    ["a bad method token", "G@T /health HTTP/1.1\r\nHost: x\r\n\r\n"],
    ["a bad HTTP version", "GET /health HTTP/9.Z\r\nHost: x\r\n\r\n"],
    ["a space in the target", "GET /he alth HTTP/1.1\r\nHost: x\r\n\r\n"],
    ["a header without a colon", "GET /health HTTP/1.1\r\nHost: x\r\nbroken header\r\n\r\n"]
  ])("a malformed request (%s): 400", async (_, request) => {
    const answer = await raw(request)
    expect(answer.status).toBe(400)
    expect(answer.headers["content-type"]).toBe("application/json")
    expect(answer.body._tag).toBe("DataValidationError")
    expect(typeof answer.body.message).toBe("string")
  })

  it("an HTTP/1.1 request without Host: 400; HTTP/1.0 needs none", async () => {
    expectJsonError(await raw("GET /health HTTP/1.1\r\n\r\n"), 400, "DataValidationError", "Host")
    const old = await raw("GET /health HTTP/1.0\r\n\r\n")
    expect(old.status).toBe(200)
    expect(old.body).toEqual({ status: "ok" })
  })

  it("still honours Expect: 100-continue", async () => {
    const body = JSON.stringify(suggestions)
    const text = await new Promise<string>((resolve, reject) => {
      const socket = connect(portOf(server), "127.0.0.1", () =>
        socket.write(
          `POST /api/widget/v1/suggestions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n` +
            `Content-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`
        ))
      let read = ""
      socket.setEncoding("utf8")
      socket.on("data", (chunk) => {
        read += chunk
        if (read === "HTTP/1.1 100 Continue\r\n\r\n") socket.write(body)
      })
      socket.on("close", () => resolve(read))
      socket.on("error", reject)
    })
    expect(text.startsWith("HTTP/1.1 100 Continue\r\n\r\n")).toBe(true)
    const answer = parseAnswer(text.slice("HTTP/1.1 100 Continue\r\n\r\n".length))
    expect(answer.status).toBe(200)
    expect(Array.isArray(answer.body)).toBe(true)
  })

  it("the server still answers normally afterwards", async () => {
    expect((await getJson(`${server.origin}/health`)).status).toBe(200)
  })
})

describe("what Node's parser lets through but is ambiguous: 400, before any route", () => {
  const chunkedPost = (headers: string, title: string) => {
    const body = JSON.stringify({ ...feedback, title })
    return `POST /api/widget/v1/feedback HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${headers}\r\n\r\n` +
      `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`
  }

  it.each([
    ["identity, then chunked, in two fields", "Transfer-Encoding: identity\r\nTransfer-Encoding: chunked"],
    ["identity, chunked in one field", "Transfer-Encoding: identity, chunked"],
    ["gzip, chunked", "Transfer-Encoding: gzip, chunked"]
  ])("Transfer-Encoding %s: 400, nothing created, connection closed", async (name, headers) => {
    const title = `TE ${name}`
    const answer = await raw(chunkedPost(headers, title))
    expect(answer.status).toBe(400)
    expect(answer.body).toEqual({ _tag: "DataValidationError", message: "Transfer-Encoding: must be a single chunked" })
    expect(answer.headers["connection"]).toBe("close")
    // Refused before the rate limiter counts it.
    expect(answer.headers["ratelimit-limit"]).toBeUndefined()
    expect(await postsTitled(title)).toBe(0)
  })

  it("Transfer-Encoding on an HTTP/1.0 request: 400, nothing created (RFC 9112 §6.1: its framing is faulty)", async () => {
    const title = "TE on HTTP/1.0"
    const answer = await raw(chunkedPost("Transfer-Encoding: chunked", title).replace(" HTTP/1.1\r\n", " HTTP/1.0\r\n"))
    expect(answer.status).toBe(400)
    expect(answer.body).toEqual({ _tag: "DataValidationError", message: "Transfer-Encoding: not allowed in HTTP/1.0" })
    expect(answer.headers["connection"]).toBe("close")
    expect(await postsTitled(title)).toBe(0)
  })

  it("a single Transfer-Encoding: chunked (any case) is still accepted", async () => {
    const answer = await raw(chunkedPost("Transfer-Encoding: Chunked\r\nConnection: close", "TE chunked once"))
    expect(answer.status).toBe(200)
    expect(await postsTitled("TE chunked once")).toBe(1)
  })

  it.each([
    ["no Host", "OPTIONS /api/widget/v1/feedback HTTP/1.1\r\n", "Host: required"],
    ["two Host fields", "OPTIONS /api/widget/v1/feedback HTTP/1.1\r\nHost: x\r\nHost: y\r\n", "Host: more than one"],
    ["identity, chunked", "OPTIONS /api/widget/v1/feedback HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity, chunked\r\n", "Transfer-Encoding: must be a single chunked"]
  ])("a CORS preflight with %s: 400 too, not a 204", async (_, head, message) => {
    const answer = await raw(`${head}Origin: http://localhost\r\nAccess-Control-Request-Method: POST\r\n\r\n`)
    expect(answer.status).toBe(400)
    expect(answer.body).toEqual({ _tag: "DataValidationError", message })
    expect(answer.headers["connection"]).toBe("close")
  })

  it.each([
    ["different", "Host: x\r\nHost: y"],
    ["equal", "Host: x\r\nHost: x"]
  ])("two Host fields (%s): 400", async (_, hosts) => {
    const answer = await raw(`GET /health HTTP/1.1\r\n${hosts}\r\n\r\n`)
    expect(answer.status).toBe(400)
    expect(answer.body).toEqual({ _tag: "DataValidationError", message: "Host: more than one" })
    expect(answer.headers["connection"]).toBe("close")
  })
})

describe("a malformed request after whole ones on the same connection", () => {
  const garbage = "GARBAGE\r\n\r\n"
  const invalidMethod = { _tag: "DataValidationError", message: "request line: invalid method" }

  it("a POST /feedback and garbage in one packet: the POST is done once and answered 200, then the 400", async () => {
    const title = "Pipelined before garbage"
    const body = JSON.stringify({ ...feedback, title })
    const answers = parseAnswers(await rawExchange(
      portOf(server),
      `POST /api/widget/v1/feedback HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}${garbage}`
    ))
    expect(answers.map((answer) => answer.status)).toEqual([200, 400])
    expect(answers[0]!.body.title).toBe(title)
    expect(answers[1]!.body).toEqual(invalidMethod)
    expect(answers[1]!.headers["connection"]).toBe("close")
    expect(await postsTitled(title)).toBe(1)
  })

  it("two GETs and garbage in one packet: both answered in order, then the 400", async () => {
    const answers = parseAnswers(await rawExchange(
      portOf(server),
      `GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /api/widget/v1/boards?organizationId=org_acme HTTP/1.1\r\nHost: x\r\n\r\n${garbage}`
    ))
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 400])
    expect(answers[0]!.body).toEqual({ status: "ok" })
    expect(answers[1]!.body.map((board: { id: string }) => board.id)).toContain("b_feat")
    expect(answers[2]!.body).toEqual(invalidMethod)
  })

  it("a GET, then a POST whose chunked body breaks: the GET's answer, then the 400 for the POST", async () => {
    const answers = parseAnswers(await rawExchange(
      portOf(server),
      "GET /health HTTP/1.1\r\nHost: x\r\n\r\n" +
        "POST /api/widget/v1/feedback HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\nzz\r\n"
    ))
    expect(answers.map((answer) => answer.status)).toEqual([200, 400])
    expect(answers[1]!.body).toEqual({ _tag: "DataValidationError", message: "body: malformed chunked encoding" })
  })

  it("a GET with Connection: close, then garbage: only the GET is answered", async () => {
    const answers = parseAnswers(await rawExchange(portOf(server), `GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n${garbage}`))
    expect(answers.map((answer) => answer.status)).toEqual([200])
  })

  it("a client that resets the connection while its error waits does not disturb the server", async () => {
    const body = JSON.stringify({ ...feedback, title: "Reset while waiting" })
    await sendAndReset(
      `POST /api/widget/v1/feedback HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}${garbage}`
    )
    expect((await getJson(`${server.origin}/health`)).status).toBe(200)
  })
})

describe("CONNECT and Upgrade", () => {
  it("a client that sends CONNECT and resets at once does not disturb the server", async () => {
    for (let i = 0; i < 20; i++) await sendAndReset("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
    expect((await getJson(`${server.origin}/health`)).status).toBe(200)
  })

  it("CONNECT: 405 in JSON with Allow, then the connection closes", async () => {
    const answer = await raw("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
    expect(answer.status).toBe(405)
    expect(answer.body).toEqual({ _tag: "DataValidationError", message: "method: CONNECT is not allowed" })
    expect(answer.headers["allow"]).toBe("GET, HEAD, POST, OPTIONS")
    expect(answer.headers["connection"]).toBe("close")
  })

  it.each(["websocket", "h2c"])("Upgrade: %s is an ordinary request, and the connection stays usable", async (protocol) => {
    const answers = parseAnswers(await rawExchange(portOf(server), [
      `GET /health HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: ${protocol}\r\n\r\n`,
      "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    ]))
    expect(answers.map((answer) => [answer.status, answer.body])).toEqual([[200, { status: "ok" }], [200, { status: "ok" }]])
    expect(answers[0]!.headers["connection"]).toBe("keep-alive")
  })

  it("Upgrade on a POST with a chunked body: the post is created as usual", async () => {
    const title = "Upgrade chunked"
    const body = JSON.stringify({ ...feedback, title })
    const answer = await raw(
      "POST /api/widget/v1/feedback HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, close\r\nUpgrade: foo\r\nContent-Type: application/json\r\n" +
        `Transfer-Encoding: chunked\r\n\r\n${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`
    )
    expect(answer.status).toBe(200)
    expect(answer.body.title).toBe(title)
    expect(await postsTitled(title)).toBe(1)
  })
})

describe("start-up", () => {
  const started: Array<TestServer> = []
  afterAll(() => Promise.all(started.map((s) => s.close())))

  it("never accepts a connection it leaves unanswered: every request during start-up gets 200 or a JSON 503", async () => {
    const port = await freePort()
    let ready = false
    const answers: Array<RawAnswer> = []
    const failures: Array<string> = []
    // Probes as fast as connections are refused, from before the port opens until after start-up.
    const probe = async () => {
      for (let afterReady = 0; afterReady < 20;) {
        if (ready) afterReady++
        try {
          answers.push(parseAnswer(await rawExchange(port, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 3_000)))
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code
          if (code !== "ECONNREFUSED") failures.push(String(error))
          await new Promise((resolve) => setTimeout(resolve, 1))
        }
      }
    }
    const probes = Array.from({ length: 4 }, probe)
    // With Redis the rate limiter connects while the routes are built: the window this test once caught.
    started.push(await startServer({ PORT: String(port), REDIS_URL: testRedisUrl }))
    ready = true
    await Promise.all(probes)
    expect(failures).toEqual([])
    expect(answers.length).toBeGreaterThanOrEqual(80)
    for (const answer of answers) {
      if (answer.status === 200) expect(answer.body).toEqual({ status: "ok" })
      else {
        expect(answer.status).toBe(503)
        expect(answer.body).toEqual({ _tag: "InternalServerError", message: "starting up; retry shortly" })
      }
    }
  }, 60_000)
})

describe("NodeErrors on a server with no handler attached", () => {
  let bare: Server | undefined
  afterAll(() => new Promise<void>((resolve) => (bare ? bare.close(() => resolve()) : resolve())))

  it("answers 503 InternalServerError in JSON, and stays silent once a handler is attached", async () => {
    bare = install(createServer())
    await new Promise<void>((resolve) => bare!.listen(0, "127.0.0.1", () => resolve()))
    const port = (bare.address() as { port: number }).port
    const early = parseAnswer(await rawExchange(port, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"))
    expect(early.status).toBe(503)
    expect(early.headers["retry-after"]).toBe("1")
    expect(early.body).toEqual({ _tag: "InternalServerError", message: "starting up; retry shortly" })
    // A listener that only sets a header (the draining server's `Connection: close`) is no handler.
    prependAuxiliaryRequestListener(bare, (_req, res) => res.setHeader("x-auxiliary", "1"))
    const stillEarly = parseAnswer(await rawExchange(port, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"))
    expect([stillEarly.status, stillEarly.body, stillEarly.headers["x-auxiliary"]])
      .toEqual([503, { _tag: "InternalServerError", message: "starting up; retry shortly" }, "1"])
    bare.on("request", (_req, res) => res.writeHead(200, { connection: "close" }).end("served"))
    const served = parseAnswer(await rawExchange(port, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"))
    expect([served.status, served.text]).toEqual([200, "served"])
  })
})
