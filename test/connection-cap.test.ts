import { ConfigProvider, Effect } from "effect"
import { request } from "node:http"
import { connect, type Socket } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { loadServerConfig } from "../packages/server/src/config/ServerConfig.js"
import { createDatabase, type TestDatabase } from "./support/database.js"
import { freePort, spawnServer, type ServerProcess, waitForHealth } from "./support/process.js"

/**
 * `MAX_CONNECTIONS_PER_ADDRESS` (docs/decisions/0029-request-bodies-and-sockets.md),
 * with real sockets to the built server run as a process: sockets beyond the
 * cap from one address are closed as they are accepted, and another address
 * is served as before. Linux routes all of 127.0.0.0/8 to loopback, so
 * 127.0.0.3 and 127.0.0.2 are two client addresses of their own (127.0.0.1
 * holds the start-up probe's kept-alive connection).
 */

const cap = 20
let db: TestDatabase
let server: ServerProcess
let port: number
const opened = new Set<Socket>()

beforeAll(async () => {
  db = await createDatabase()
  port = await freePort()
  server = spawnServer({ DATABASE_URL: db.url, LOG_LEVEL: "warn", MAX_CONNECTIONS_PER_ADDRESS: String(cap) }, port)
  await waitForHealth(server.origin)
}, 60_000)

afterAll(async () => {
  for (const socket of opened) socket.destroy()
  server?.child.kill("SIGKILL")
  await db?.drop()
})

interface Held {
  readonly socket: Socket
  /** Milliseconds from connecting to the server's close, if it closed; bytes it sent meanwhile. */
  readonly closedAfterMs: () => number | undefined
  readonly received: () => number
}

/** An idle TCP connection from `localAddress`, once connected. */
const hold = (localAddress: string) =>
  new Promise<Held>((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port, localAddress })
    opened.add(socket)
    let connectedAt = 0
    let closedAfterMs: number | undefined
    let received = 0
    socket.on("data", (chunk) => (received += chunk.length))
    socket.on("error", () => undefined)
    socket.once("close", () => (closedAfterMs = performance.now() - connectedAt, opened.delete(socket)))
    socket.once("connect", () => {
      connectedAt = performance.now()
      resolve({ socket, closedAfterMs: () => closedAfterMs, received: () => received })
    })
    socket.once("error", reject)
  })

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** `GET /health` on a connection of its own from `localAddress`: its status (0: no answer) and how long it took. */
const health = (localAddress: string) =>
  new Promise<{ status: number; ms: number }>((resolve) => {
    const started = performance.now()
    const req = request({ host: "127.0.0.1", port, path: "/health", localAddress, agent: false, timeout: 5_000 }, (res) => {
      res.resume().on("end", () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }))
    })
    req.on("timeout", () => req.destroy())
    req.on("error", () => resolve({ status: 0, ms: performance.now() - started }))
    req.end()
  })

describe(`MAX_CONNECTIONS_PER_ADDRESS=${cap}`, () => {
  it("closes an address's sockets beyond the cap as they are accepted; another address and /health are unaffected", async () => {
    const held = await Promise.all(Array.from({ length: cap }, () => hold("127.0.0.3")))
    // Beyond the cap, in bounded batches, while 127.0.0.2 asks for /health.
    const extra: Array<Held> = []
    const healths: Array<{ status: number; ms: number }> = []
    const probing = (async () => {
      for (let i = 0; i < 10; i++) healths.push(await health("127.0.0.2"))
    })()
    for (let batch = 0; batch < 10; batch++) {
      extra.push(...await Promise.all(Array.from({ length: 50 }, () => hold("127.0.0.3"))))
    }
    await probing
    // A request sent on an extra socket gets nothing: it was closed before any byte was read.
    const late = await hold("127.0.0.3")
    late.socket.write("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    extra.push(late)
    await sleep(1_000)

    const closed = extra.map((e) => e.closedAfterMs())
    console.info(
      `${cap} held, ${extra.length} beyond: closed after at most ${Math.round(Math.max(...closed.map((ms) => ms ?? Infinity)))} ms; ` +
        `/health from 127.0.0.2 at most ${Math.round(Math.max(...healths.map((h) => h.ms)))} ms`
    )
    expect(closed.filter((ms) => ms === undefined)).toEqual([])
    expect(closed.filter((ms) => ms! > 1_000)).toEqual([])
    expect(extra.map((e) => e.received()).filter((bytes) => bytes > 0)).toEqual([])
    // The sockets within the cap are untouched, and another address is served.
    expect(held.filter((h) => h.closedAfterMs() !== undefined)).toEqual([])
    expect(healths.map((h) => h.status)).toEqual(Array<number>(10).fill(200))
    expect(healths.filter((h) => h.ms > 1_000)).toEqual([])
    const others = await Promise.all(Array.from({ length: cap }, () => hold("127.0.0.2")))
    expect((await health("127.0.0.2")).status).toBe(0) // 127.0.0.2 is at its own cap now
    expect((await health("127.0.0.3")).status).toBe(0)

    // A closed socket frees its place.
    held[0]!.socket.destroy()
    others[0]!.socket.destroy()
    await sleep(200)
    expect((await health("127.0.0.3")).status).toBe(200)
    expect((await health("127.0.0.2")).status).toBe(200)
    for (const h of [...held, ...others]) h.socket.destroy()
  }, 30_000)
})

describe("the variable", () => {
  const load = (env: Record<string, string>) =>
    Effect.runPromise(Effect.result(loadServerConfig.pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env }))))))

  it("defaults to 256, and to 0 (no cap) behind a proxy, where every socket is the proxy's", async () => {
    const cases = [{}, { TRUST_PROXY: "1" }, { TRUST_PROXY: "1", MAX_CONNECTIONS_PER_ADDRESS: "64" }, { MAX_CONNECTIONS_PER_ADDRESS: "0" }]
    const values = await Promise.all(cases.map(async (env) => {
      const result = await load(env)
      return result._tag === "Success" ? result.success.maxConnectionsPerAddress : result.failure.message
    }))
    expect(values).toEqual([256, 0, 64, 0])
  })

  it.each(["-1", "abc", "1e3", "1000001", "2.5"])("refuses %s in one line", async (value) => {
    const result = await load({ MAX_CONNECTIONS_PER_ADDRESS: value })
    expect(result._tag === "Failure" ? result.failure.message : "accepted").toBe(
      `Invalid configuration: MAX_CONNECTIONS_PER_ADDRESS must be an integer between 0 and 1000000 (0: no cap), got ${JSON.stringify(value)}`
    )
  })
})
