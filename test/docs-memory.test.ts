import { connect, type Socket } from "node:net"
import { afterAll, expect, it } from "vitest"
import { createDatabase, type TestDatabase } from "./support/database.js"
import { freePort, spawnServer, type ServerProcess, waitForHealth } from "./support/process.js"
import { eventually } from "./support/wait.js"

/**
 * Decision 0016: 50 connections each pipelining 10 `GET /docs` and never
 * reading killed the server (heap out of memory) when every pending answer
 * held its own copy of the 3 MB page. The page is small now (decision 0035):
 * the 3 MB are Scalar's bundle, `GET /docs/scalar.js`, asked here instead. The server runs as a process with a
 * small old space; the rate limit is lifted so that all 500 are answered with
 * the page. Not timed: it waits until the server has answered all 500 (its
 * request counter) or has died.
 */
const connections = 50
const pipelined = 10

let db: TestDatabase | undefined
let server: ServerProcess | undefined
const sockets: Array<Socket> = []

afterAll(async () => {
  for (const socket of sockets) socket.destroy()
  if (server !== undefined && server.child.exitCode === null) {
    server.child.kill("SIGTERM")
    await server.exited
  }
  await db?.drop()
})

const docsAnswered = async (metricsPort: number) => {
  const text = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((r) => r.text(), () => "")
  const line = text.split("\n").find((l) => l.startsWith("hearken_http_requests_total{") && l.includes(`endpoint="docs"`) && l.includes(`status="200"`))
  return line === undefined ? 0 : Number(line.split(" ").at(-1))
}

it("survives 50 never-reading clients pipelining 10 GET /docs/scalar.js each, on a 128 MB heap", async () => {
  db = await createDatabase()
  const [port, metricsPort] = [await freePort(), await freePort()]
  server = spawnServer({
    DATABASE_URL: db.url,
    LOG_LEVEL: "error",
    RATE_LIMIT_MULTIPLIER: "1000",
    METRICS_PORT: String(metricsPort),
    NODE_OPTIONS: "--max-old-space-size=128 --max-semi-space-size=8"
  }, port)
  await waitForHealth(server.origin)

  const request = `GET /docs/scalar.js HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept-Encoding: identity\r\n\r\n`.repeat(pipelined)
  for (let i = 0; i < connections; i++) {
    const socket = await new Promise<Socket>((resolve, reject) => {
      const s = connect(port, "127.0.0.1", () => resolve(s)).once("error", reject)
    })
    socket.on("error", () => {})
    socket.pause()
    sockets.push(socket)
    socket.write(request)
  }

  const answered = await eventually(
    "all 500 answers written, or the server gone",
    async () => {
      if (server!.child.exitCode !== null || server!.child.signalCode !== null) return -1
      const count = await docsAnswered(metricsPort)
      return count >= connections * pipelined ? count : undefined
    },
    { timeoutMs: 60_000, everyMs: 250, describe: () => server!.output().slice(-2_000) }
  )
  expect(answered, server.output().slice(-2_000)).toBe(connections * pipelined)
  // With every answer still pending, the server goes on answering.
  const health = await fetch(`${server.origin}/health`)
  expect(health.status).toBe(200)
  expect(server.child.exitCode).toBeNull()
}, 90_000)
