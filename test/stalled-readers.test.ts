import { connect, type Socket } from "node:net"
import { describe, expect, it } from "vitest"
import { getJson, startServer, useServer } from "./support/server.js"

/**
 * A client that stops reading a large answer holds its connection for as long
 * as nothing moves on it; `HTTP_STALL_TIMEOUT_MS` closes such a connection
 * (decision 0022). Here it is 1 s, and the client stalls for 4 s at least.
 */
const stallMs = 1_000
// The stall timeout must outlast what a request may wait on (statements, an embeddings call).
const server = useServer(() =>
  startServer({ HTTP_STALL_TIMEOUT_MS: String(stallMs), DATABASE_STATEMENT_TIMEOUT_MS: "500", EMBEDDINGS_TIMEOUT_MS: "400" }))

const open = (port: string) =>
  new Promise<Socket>((resolve, reject) => {
    const socket = connect(Number(port), "127.0.0.1", () => resolve(socket)).once("error", reject)
  })

/** The largest answer the server has: Scalar's bundle for the `/docs` page (3 MB). */
const docsRequest = (host: string) => `GET /docs/scalar.js HTTP/1.1\r\nHost: ${host}\r\nAccept-Encoding: identity\r\n\r\n`

const pageBytes = async () => {
  const res = await fetch(`${server.origin}/docs/scalar.js`, { headers: { "accept-encoding": "identity" } })
  expect(res.status).toBe(200)
  return (await res.arrayBuffer()).byteLength
}

/** Reads until the server closes the connection; yields the bytes read. */
const readToClose = (socket: Socket) =>
  new Promise<number>((resolve) => {
    let bytes = 0
    socket.on("data", (chunk: Buffer) => (bytes += chunk.length))
    socket.once("close", () => resolve(bytes))
    socket.once("error", () => {})
    socket.resume()
  })

describe("a connection on which nothing moves", () => {
  it("is closed after HTTP_STALL_TIMEOUT_MS: a client that never reads ten pipelined /docs/scalar.js does not get them all", async () => {
    const page = await pageBytes()
    const host = new URL(server.origin).host
    const socket = await open(new URL(server.origin).port)
    socket.pause()
    socket.write(docsRequest(host).repeat(10))
    // What the kernel buffers between the two sockets (a few MB on loopback) is written; then
    // nothing moves. Four stall periods later, the client reads whatever there is.
    await new Promise((resolve) => setTimeout(resolve, 4 * stallMs))
    const read = await readToClose(socket)
    expect(read).toBeGreaterThan(0)
    expect(read).toBeLessThan(10 * page)
    expect((await getJson(`${server.origin}/health`)).status).toBe(200)
  })

  it("stays open for a client that pauses for less than that between reads: the whole page arrives", async () => {
    const page = await pageBytes()
    const host = new URL(server.origin).host
    const socket = await open(new URL(server.origin).port)
    socket.on("error", () => {})
    socket.setNoDelay(true)
    let received = Buffer.alloc(0)
    let total: number | undefined
    let chunks = 0
    const done = new Promise<void>((resolve) => {
      socket.on("data", (chunk: Buffer) => {
        received = Buffer.concat([received, chunk])
        const headEnd = received.indexOf("\r\n\r\n")
        if (total === undefined && headEnd >= 0) {
          total = headEnd + 4 + Number(/content-length: (\d+)/i.exec(received.subarray(0, headEnd).toString("latin1"))?.[1])
        }
        if (total !== undefined && received.length >= total) return resolve()
        // Three pauses, each well within the stall timeout, while the server has more to send.
        if (++chunks > 3) return
        socket.pause()
        setTimeout(() => socket.resume(), stallMs * 0.6)
      })
    })
    socket.write(docsRequest(host))
    await done
    expect(received.length).toBe(total)
    expect(total! - received.indexOf("\r\n\r\n") - 4).toBe(page)
    expect(socket.destroyed).toBe(false)
    socket.destroy()
  })
})
