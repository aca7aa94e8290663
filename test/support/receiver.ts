import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import { listenOnLoopback } from "./net.js"
import { eventually } from "./wait.js"

export interface Received {
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly body: string
  /** `Date.now()` when the whole request had arrived. */
  readonly at: number
}

export interface Answer {
  readonly status: number
  readonly headers?: Record<string, string>
  readonly body?: string
  /** Wait this long before answering. */
  readonly delayMs?: number
}

/** How a path answers its `n`-th request (1-based). */
export type Behaviour = (n: number, request: Received) => Answer

/**
 * A webhook receiver on 127.0.0.1: records every request, and answers each
 * path as told (200 by default). Closing it drops connections held open by
 * slow answers.
 */
export class Receiver {
  readonly received: Array<Received> = []
  private readonly behaviours = new Map<string, Behaviour>()
  private readonly counts = new Map<string, number>()
  private constructor(private readonly server: Server, readonly port: number) {}

  static async start(): Promise<Receiver> {
    const server = createServer()
    const receiver = new Receiver(server, await listenOnLoopback(server))
    server.on("request", (req, res) => {
      let body = ""
      req.setEncoding("utf8")
      req.on("data", (chunk) => (body += chunk))
      req.on("end", () => {
        const path = req.url ?? "/"
        const request = { path, headers: req.headers, body, at: Date.now() }
        receiver.received.push(request)
        const n = (receiver.counts.get(path) ?? 0) + 1
        receiver.counts.set(path, n)
        const behaviour: Behaviour = receiver.behaviours.get(path) ?? (() => ({ status: 200 }))
        const answer = behaviour(n, request)
        const reply = () => {
          if (res.destroyed) return
          res.writeHead(answer.status, answer.headers)
          res.end(answer.body ?? "")
        }
        if (answer.delayMs === undefined) reply()
        else setTimeout(reply, answer.delayMs).unref()
      })
    })
    return receiver
  }

  /** `http://127.0.0.1:PORT/path` */
  url(path: string) {
    return `http://127.0.0.1:${this.port}${path}`
  }

  on(path: string, behaviour: Behaviour) {
    this.behaviours.set(path, behaviour)
    return this
  }

  at(path: string) {
    return this.received.filter((r) => r.path === path)
  }

  /** Resolves once `path` has received `count` requests; fails after `timeoutMs`. */
  waitFor(path: string, count: number, timeoutMs = 15_000): Promise<Array<Received>> {
    return eventually(
      `${count} requests to ${path}`,
      async () => this.at(path).length >= count ? this.at(path) : undefined,
      { timeoutMs, everyMs: 20, describe: () => `${this.at(path).length} arrived` }
    )
  }

  /** Drops every open connection, as a receiver that crashed would. */
  dropConnections() {
    this.server.closeAllConnections()
  }

  close() {
    this.server.closeAllConnections()
    return new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}

/** The secret every test endpoint signs with (Standard Webhooks' own example key). */
export const testWebhookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

/** A fixture endpoint subscribed to `feedback.post.created` unless `events` says otherwise. */
export const endpoint = (id: string, url: string, events: ReadonlyArray<string> = ["feedback.post.created"]) => ({
  id,
  url,
  secret: testWebhookSecret,
  events
})

/** A one-board organization with `webhooks`, for tests that need their own. */
export const webhookOrganization = (id: string, webhooks: ReadonlyArray<ReturnType<typeof endpoint>>) => ({
  id,
  name: id,
  statuses: [{ id: `st_${id}`, name: "Open" }],
  webhooks,
  boards: [{ id: `b_${id}`, name: "Board", slug: "board", visibility: "public" }]
})
