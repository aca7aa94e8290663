import { createServer as createTcpServer, type Socket } from "node:net"
import { createServer, type ServerResponse } from "node:http"
import { gzipSync } from "node:zlib"
import { afterAll, describe, expect, it } from "vitest"
import { listenOnLoopback } from "./support/net.js"
import { endpoint, webhookOrganization } from "./support/receiver.js"
import { postJson, startSeededServer, useServer } from "./support/server.js"
import { eventually } from "./support/wait.js"

/**
 * Receivers that answer badly (decision 0007: at most 64 KiB of an answer is
 * read, and WEBHOOK_TIMEOUT_MS covers the status and the body). Set to 2 s
 * here: what is tested is that the timeout cuts the answer, not its default.
 */
const timeoutMs = 2_000

/** What the receiver saw of each path's one request: when it came, how much of the answer left, when the worker hung up. */
interface Exchange {
  readonly at: number
  flushed: number
  finished: boolean
  closedAt?: number
}
const exchanges = new Map<string, Exchange>()
const open = new Set<Socket>()

const chunk = Buffer.alloc(64 * 1024, "x")
/** Writes `next()` chunks while the socket takes them, counting what was flushed, until it closes or `next` runs out. */
const pump = (res: ServerResponse, exchange: Exchange, next: () => Buffer | undefined) => {
  const write = () => {
    for (;;) {
      if (res.destroyed) return
      const data = next()
      if (data === undefined) return void res.end(() => (exchange.finished = true))
      if (!res.write(data, () => (exchange.flushed += data.length))) return void res.once("drain", write)
    }
  }
  write()
}

// A 1 GiB gzip bomb: 100 gzip members of 10 MiB of zeros each, about 1 MB on the wire.
const bombMember = gzipSync(Buffer.alloc(10 * 1024 * 1024))
const receiver = createServer((req, res) => {
  const path = req.url ?? "/"
  const exchange: Exchange = { at: Date.now(), flushed: 0, finished: false }
  exchanges.set(path, exchange)
  open.add(req.socket)
  res.on("close", () => (exchange.closedAt = Date.now()))
  req.resume()
  req.on("end", () => {
    if (path === "/big") {
      res.writeHead(200, { "content-type": "text/plain", "content-length": String(10 * 1024 * 1024) })
      let left = 160
      pump(res, exchange, () => left-- > 0 ? chunk : undefined)
    } else if (path === "/endless") {
      res.writeHead(200, { "content-type": "text/plain" })
      pump(res, exchange, () => chunk)
    } else if (path === "/bomb") {
      res.writeHead(200, { "content-type": "text/plain", "content-encoding": "gzip" })
      let left = 100
      pump(res, exchange, () => left-- > 0 ? bombMember : undefined)
    } else if (path === "/slow") {
      // The status at once, then one byte every 100 ms, forever.
      res.writeHead(200, { "content-type": "text/plain" })
      const timer = setInterval(() => res.write("s", () => (exchange.flushed += 1)), 100)
      res.on("close", () => clearInterval(timer))
    }
  })
})
const receiverPort = await listenOnLoopback(receiver)
// A receiver that never finishes its headers: a status line, then one byte of a header every 100 ms.
const trickler = createTcpServer((socket) => {
  const exchange: Exchange = { at: Date.now(), flushed: 0, finished: false }
  exchanges.set("/headers", exchange)
  open.add(socket)
  socket.on("error", () => {})
  socket.on("close", () => (exchange.closedAt = Date.now()))
  socket.once("data", () => {
    socket.write("HTTP/1.1 200 OK\r\nx-slow: ")
    const timer = setInterval(() => socket.write("a"), 100)
    socket.on("close", () => clearInterval(timer))
  })
})
const tricklerPort = await listenOnLoopback(trickler)
afterAll(async () => {
  for (const socket of open) socket.destroy()
  await Promise.all([receiver, trickler].map((s) => new Promise((r) => s.close(r))))
})

const paths = ["/big", "/endless", "/bomb", "/slow", "/headers"]
const urlOf = (path: string) =>
  path === "/headers" ? `http://127.0.0.1:${tricklerPort}/headers` : `http://127.0.0.1:${receiverPort}${path}`
const organizationOf = (path: string) => `org_${path.slice(1)}`

const server = useServer(() =>
  startSeededServer(
    { organizations: paths.map((path) => webhookOrganization(organizationOf(path), [endpoint(`wh_${path.slice(1)}`, urlOf(path))])) },
    { WEBHOOK_ALLOW_PRIVATE_URLS: "true", WEBHOOK_TIMEOUT_MS: String(timeoutMs), WEBHOOK_MAX_ATTEMPTS: "1", LOG_LEVEL: "none" }
  )
)

const deliveryOf = async (path: string) => {
  const [row] = await server.db.query((sql) =>
    sql`SELECT status, attempts, last_status AS "lastStatus", last_error AS "lastError", last_response AS "lastResponse",
        lease_token IS NOT NULL AS leased, (extract(epoch FROM last_attempt_at) * 1000)::float8 AS "recordedAt"
      FROM webhook_deliveries WHERE endpoint_id = ${`wh_${path.slice(1)}`}`
  )
  return row
}

describe("a receiver's answer", () => {
  it("is read up to 64 KiB and never inflated, and no attempt holds its slot past WEBHOOK_TIMEOUT_MS", async () => {
    const rss = { before: process.memoryUsage().rss, peak: 0 }
    const sampler = setInterval(() => (rss.peak = Math.max(rss.peak, process.memoryUsage().rss)), 20)
    try {
      for (const path of paths) {
        const res = await postJson(`${server.api}/feedback`, {
          organizationId: organizationOf(path),
          boardId: `b_${organizationOf(path)}`,
          title: `Answer ${path}`,
          content: ""
        })
        expect(res.status).toBe(200)
      }
      // Every attempt is over, and recorded, within the timeout (and the write of its outcome).
      const rows = await eventually("every attempt to be recorded", async () => {
        const found = await Promise.all(paths.map(deliveryOf))
        return found.every((row) => row !== undefined && row["attempts"] === 1 && row["leased"] === false) ? found : undefined
      }, { timeoutMs: timeoutMs + 5_000, everyMs: 20 })
      const byPath = Object.fromEntries(paths.map((path, i) => [path, rows[i]!]))
      await eventually("every connection to close", async () => paths.every((p) => exchanges.get(p)?.closedAt !== undefined) || undefined, {
        timeoutMs: 2_000
      })
      const heldFor = (path: string) => exchanges.get(path)!.closedAt! - exchanges.get(path)!.at

      // 10 MB and a never-ending answer: the worker hangs up once it has 64 KiB, long before the
      // timeout and before the receiver could send it all (what left it is in the sockets' buffers).
      // A 2xx status line is a success.
      for (const path of ["/big", "/endless"]) {
        expect(byPath[path]).toMatchObject({ status: "succeeded", lastStatus: 200, lastResponse: "x".repeat(500) })
        expect(exchanges.get(path)!.finished).toBe(false)
        expect(exchanges.get(path)!.flushed).toBeLessThan(10 * 1024 * 1024)
        expect(heldFor(path)).toBeLessThan(timeoutMs / 2)
      }
      // The gzip bomb (about 1 MB on the wire) is read as it came, compressed, and never
      // inflated: what is kept starts with gzip's magic bytes, not with the zeros it inflates to.
      expect(byPath["/bomb"]).toMatchObject({ status: "succeeded", lastStatus: 200 })
      expect(byPath["/bomb"]!["lastResponse"]).toMatch(/^\u001f\ufffd\u0008/)
      expect(heldFor("/bomb")).toBeLessThan(timeoutMs / 2)

      // A body that trickles, and headers that never end: cut at the timeout.
      for (const path of ["/slow", "/headers"]) {
        expect(heldFor(path)).toBeGreaterThanOrEqual(timeoutMs - 50)
        expect(heldFor(path)).toBeLessThan(timeoutMs + 1_000)
        expect(byPath[path]!["recordedAt"] as number - exchanges.get(path)!.at).toBeLessThan(timeoutMs + 1_000)
      }
      expect(byPath["/slow"]).toMatchObject({ status: "succeeded", lastStatus: 200 })
      expect(byPath["/slow"]!["lastResponse"]).toMatch(/^s{10,30}$/)
      expect(byPath["/headers"]).toMatchObject({ status: "failed", lastStatus: null, lastError: `no answer within ${timeoutMs} ms (after 1 attempts)` })
      // Inflating the bomb alone would have taken a gigabyte.
      expect(rss.peak - rss.before).toBeLessThan(200 * 1024 * 1024)
    } finally {
      clearInterval(sampler)
    }
  }, 30_000)
})
