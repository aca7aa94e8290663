/**
 * `npm run bench:docs`: the attack on `GET /docs` of decision 0016. The server
 * starts as `npm start` starts it (the V8 flags of decision 0011, the embedded
 * PGlite default, in memory, and the in-process rate limiter). Then 50 loopback
 * connections each send 10 pipelined `GET /docs/scalar.js` (the 3 MB that the
 * page itself was until decision 0035) with
 * `Accept-Encoding: identity` in one write. Meanwhile `/health` is asked every
 * 100 ms and the server's RSS is read from `/proc/PID/status`.
 *
 * Two phases, each with a fresh server:
 * - `never-read`: the clients never read, and hang up after 12 s;
 * - `read`: the clients read every answer (up to 20 s).
 *
 * `--only never-read|read` runs one phase. `--unlimited` lifts the rate limit
 * (`RATE_LIMIT_MULTIPLIER=1000`), so that every request is answered with the
 * page and the memory is the page's, not the 429s'. Each phase prints whether
 * the server lived, its peak RSS, and the worst `/health` latency. Targets:
 * alive, RSS ≤ 400 MB, `/health` within 1 s throughout. Bounded: at most
 * about 30 s per phase, loopback only.
 */
import { connect, type Socket } from "node:net"
import { memory, startProcess } from "./support.ts"

const connections = 50
const pipelined = 10
const holdMs = 12_000
const readTimeoutMs = 20_000
const healthTimeoutMs = 5_000

const args = process.argv.slice(2)
const only = args.includes("--only") ? args[args.indexOf("--only") + 1] : undefined
const unlimited = args.includes("--unlimited")

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The server's RSS, or undefined once it has died. */
const rssMb = (pid: number): number | undefined => {
  try {
    return memory(pid).rssMb
  } catch {
    return undefined
  }
}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Asks `/health` every 100 ms until `stop()`, keeping each latency (a failure counts as its whole wait). */
const pollHealth = (origin: string) => {
  const latencies: Array<number> = []
  let failures = 0
  let running = true
  const done = (async () => {
    while (running) {
      const start = performance.now()
      const ok = await fetch(`${origin}/health`, { signal: AbortSignal.timeout(healthTimeoutMs) })
        .then((r) => r.arrayBuffer().then(() => r.status === 200), () => false)
      latencies.push(performance.now() - start)
      if (!ok) failures++
      await sleep(100)
    }
  })()
  return { latencies, failures: () => failures, stop: async () => (running = false, await done) }
}

const request = (port: number) =>
  `GET /docs/scalar.js HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept-Encoding: identity\r\n\r\n`.repeat(pipelined)

/** Opens the connections and sends every request at once; `read` decides whether the clients read. */
const attack = async (port: number, read: boolean) => {
  let received = 0
  let answers = 0
  const sockets = await Promise.all(Array.from({ length: connections }, () =>
    new Promise<Socket>((resolve, reject) => {
      const socket = connect(port, "127.0.0.1", () => resolve(socket))
      socket.once("error", reject)
    })))
  for (const socket of sockets) {
    socket.on("error", () => {})
    if (read) {
      socket.on("data", (chunk: Buffer) => {
        received += chunk.length
        // Counts status lines; a body could contain the text, but the page and a 429 do not start a line with it.
        answers += chunk.toString("latin1").split("HTTP/1.1 ").length - 1
      })
    } else {
      socket.pause()
    }
    socket.write(request(port))
  }
  return { sockets, received: () => received, answers: () => answers }
}

const phase = async (name: "never-read" | "read") => {
  const server = await startProcess("main.js", {
    PGLITE_DIR: "memory",
    ...(unlimited ? { RATE_LIMIT_MULTIPLIER: "1000" } : {})
  })
  const port = Number(new URL(server.origin).port)
  let peakRss = rssMb(server.pid) ?? 0
  const startRss = peakRss
  const sampler = setInterval(() => {
    const rss = rssMb(server.pid)
    if (rss !== undefined) peakRss = Math.max(peakRss, rss)
  }, 100)
  const health = pollHealth(server.origin)
  const started = performance.now()
  const clients = await attack(port, name === "read")
  if (name === "never-read") {
    await sleep(holdMs)
  } else {
    while (clients.answers() < connections * pipelined && performance.now() - started < readTimeoutMs && isAlive(server.pid)) {
      await sleep(100)
    }
  }
  const elapsed = performance.now() - started
  const aliveDuring = isAlive(server.pid)
  for (const socket of clients.sockets) socket.destroy()
  await sleep(500)
  await health.stop()
  clearInterval(sampler)
  const after = aliveDuring
    ? await fetch(`${server.origin}/health`, { signal: AbortSignal.timeout(healthTimeoutMs) }).then((r) => r.status, () => 0)
    : 0
  await server.stop()
  const worst = Math.max(...health.latencies)
  const result = {
    phase: name,
    rateLimit: unlimited ? "lifted (x1000)" : "as configured",
    lived: aliveDuring && after === 200,
    startRssMb: Math.round(startRss),
    peakRssMb: Math.round(peakRss),
    worstHealthMs: Math.round(worst),
    healthPolls: health.latencies.length,
    healthFailures: health.failures(),
    ...(name === "read"
      ? { answersRead: clients.answers(), mbRead: Math.round(clients.received() / 1e6), seconds: +(elapsed / 1000).toFixed(1) }
      : {})
  }
  console.log(JSON.stringify(result))
  const met = result.lived && result.peakRssMb <= 400 && result.worstHealthMs <= 1_000
  console.log(`${name}: ${met ? "within" : "MISSES"} the targets (alive, RSS <= 400 MB, /health <= 1 s)`)
  return met
}

const phases = (["never-read", "read"] as const).filter((p) => only === undefined || only === p)
let allMet = true
for (const p of phases) allMet = (await phase(p)) && allMet
process.exit(allMet ? 0 : 1)
