import { createServer, request as httpRequest, type IncomingMessage } from "node:http"
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
  const server = createServer((req, res) => {
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
  })
  const port = await listenOnLoopback(server)
  return {
    origin: `http://127.0.0.1:${port}`,
    dropNextAnswer: (matches) => void (drop = matches),
    dropped,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
  }
}
