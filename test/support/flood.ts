import { Agent, request } from "node:http"

/** How `npm start` and docs/operations.md's systemd unit start the server. */
export const productionNodeOptions = "--max-semi-space-size=8 --max-old-space-size=256"

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
