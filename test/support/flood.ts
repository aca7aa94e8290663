import { readFileSync } from "node:fs"
import { Agent, request } from "node:http"

/** How the README's production command starts the server (`npm start`, "In production"). */
export const productionNodeOptions = "--max-semi-space-size=8 --max-old-space-size=256"

/** A process's resident set, in MB, from `/proc/PID/status` (VmRSS); undefined once it is gone. */
export const rssMb = (pid: number): number | undefined => {
  try {
    const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"))
    return line === undefined ? undefined : Number(line.split(/\s+/)[1]) / 1024
  } catch {
    return undefined
  }
}

export interface Watch {
  /** Stops watching and yields the peak RSS (MB) and the slowest `/health` answer (ms), with how many answered 200 of those asked. */
  readonly stop: () => Promise<{ readonly peakRssMb: number; readonly slowestHealthMs: number; readonly healthy: number; readonly probes: number }>
  /** The peak so far. */
  readonly peakRssMb: () => number
}

/**
 * Samples the RSS of `pid` every 100 ms and asks `GET /health` one at a time,
 * every 250 ms, on a connection of its own (a probe that never answers
 * counts from when it was sent until `stop`).
 */
export const watch = (pid: number, origin: string): Watch => {
  let peak = rssMb(pid) ?? 0
  let slowest = 0
  let healthy = 0
  let probes = 0
  let stopped = false
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMb(pid) ?? 0)
  }, 100)
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const probe = async () => {
    while (!stopped) {
      const started = performance.now()
      probes++
      const status = await new Promise<number>((resolve) => {
        const req = request(`${origin}/health`, { agent }, (res) => {
          res.resume()
          res.on("end", () => resolve(res.statusCode ?? 0))
        })
        req.on("error", () => resolve(0))
        req.setTimeout(10_000, () => req.destroy())
        req.end()
      })
      slowest = Math.max(slowest, performance.now() - started)
      if (status === 200) healthy++
      await new Promise((r) => setTimeout(r, 250))
    }
  }
  const probing = probe()
  return {
    peakRssMb: () => peak,
    stop: async () => {
      stopped = true
      clearInterval(sampler)
      peak = Math.max(peak, rssMb(pid) ?? 0)
      await probing
      agent.destroy()
      return { peakRssMb: peak, slowestHealthMs: slowest, healthy, probes }
    }
  }
}

export interface FloodRequest {
  readonly path: string
  readonly method?: "GET" | "POST"
  readonly body?: string
}

/**
 * Sends `count` requests, `make(i)` each, from `addresses` loopback client
 * addresses (127.0.0.2, 127.0.0.3, …: round robin), `perAddress` keep-alive
 * connections each, and hands every answer's status and body to `check`.
 * Stops early when `stop()` says so (the server is gone). Yields how many
 * were answered.
 */
export const flood = async (
  origin: string,
  options: {
    readonly count: number
    readonly addresses: number
    readonly perAddress: number
    readonly make: (i: number) => FloodRequest
    readonly check: (i: number, status: number, body: string) => void
    readonly stop?: () => boolean
  }
): Promise<number> => {
  const agents = Array.from({ length: options.addresses }, (_, a) =>
    new Agent({ keepAlive: true, maxSockets: options.perAddress, localAddress: `127.0.0.${a + 2}` }))
  let next = 0
  let answered = 0
  const one = (i: number) =>
    new Promise<void>((resolve, reject) => {
      const { path, method = "GET", body } = options.make(i)
      const req = request(`${origin}${path}`, {
        method,
        agent: agents[i % options.addresses]!,
        headers: body === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(body) }
      }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (chunk: Buffer) => chunks.push(chunk))
        res.on("end", () => {
          answered++
          try {
            options.check(i, res.statusCode ?? 0, Buffer.concat(chunks).toString("utf8"))
            resolve()
          } catch (error) {
            reject(error)
          }
        })
      })
      req.on("error", reject)
      req.end(body)
    })
  const worker = async () => {
    while (next < options.count && !(options.stop?.() ?? false)) await one(next++)
  }
  try {
    await Promise.all(Array.from({ length: options.addresses * options.perAddress }, worker))
  } finally {
    for (const agent of agents) agent.destroy()
  }
  return answered
}
