import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http"
import { listenOnLoopback } from "./net.js"

export interface FaultyProxy {
  /** `http://127.0.0.1:PORT`: use it where the browser would use the target's origin. */
  readonly origin: string
  /**
   * The next request `matches` accepts is forwarded and answered by the
   * target in full, then its connection is dropped before the browser sees a
   * byte: the server did the work, the browser saw a network error.
   */
  readonly dropNextAnswer: (matches: (request: IncomingMessage) => boolean) => void
  /**
   * From now on, requests `matches` accepts are answered by `handler`
   * instead: it may answer itself, never answer, or `forward` the request
   * to the target (at once or later).
   */
  readonly override: (
    matches: (request: IncomingMessage) => boolean,
    handler: (request: IncomingMessage, response: ServerResponse, forward: () => void) => void
  ) => void
  /** Every request received, in order: `POST /api/…`. */
  readonly requests: ReadonlyArray<string>
  /** The statuses the target answered to the requests whose answers were dropped. */
  readonly dropped: ReadonlyArray<number>
  readonly close: () => Promise<void>
}

/**
 * A real HTTP server in front of `target` (an origin) that forwards every
 * request as it is, preflights included, so that the browser's real network
 * path, CORS checks and all, stays under test: faults are made here, on the
 * wire, instead of by intercepting requests in the browser.
 */
export const faultyProxy = async (target: string): Promise<FaultyProxy> => {
  let drop: ((request: IncomingMessage) => boolean) | undefined
  const dropped: Array<number> = []
  const overrides: Array<{ matches: (request: IncomingMessage) => boolean; handler: Parameters<FaultyProxy["override"]>[1] }> = []
  const requests: Array<string> = []
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`)
    const override = overrides.find((o) => o.matches(req))
    if (override === undefined) return forward(req, res)
    override.handler(req, res, () => forward(req, res))
  })
  const forward = (req: IncomingMessage, res: ServerResponse) => {
    const armed = drop?.(req) === true
    if (armed) drop = undefined
    const upstream = httpRequest(new URL(req.url ?? "/", target), { method: req.method, headers: req.headers }, (answer) => {
      if (armed) {
        answer.resume()
        answer.on("end", () => {
          dropped.push(answer.statusCode ?? 0)
          req.socket.destroy()
        })
        return
      }
      // A fresh connection per request: Chromium silently resends a request whose reused connection drops.
      res.writeHead(answer.statusCode ?? 502, { ...answer.headers, connection: "close" })
      answer.pipe(res)
    })
    upstream.on("error", () => res.destroy())
    req.pipe(upstream)
  }
  const port = await listenOnLoopback(server)
  return {
    origin: `http://127.0.0.1:${port}`,
    dropNextAnswer: (matches) => void (drop = matches),
    override: (matches, handler) => void overrides.push({ matches, handler }),
    dropped,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
  }
}
