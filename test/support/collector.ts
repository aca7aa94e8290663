import { createServer, type Server } from "node:http"
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from "node:net"
import { listenOnLoopback } from "./net.js"
import { eventually } from "./wait.js"

type AnyValue = { readonly stringValue?: string; readonly intValue?: number | string; readonly boolValue?: boolean; readonly doubleValue?: number }
type KeyValue = { readonly key: string; readonly value: AnyValue }

/** One span as an OTLP/HTTP JSON export carries it, with its resource's attributes. */
export interface CollectedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  /** 1 internal, 2 server, 3 client. */
  readonly kind: number
  readonly attributes: Record<string, unknown>
  readonly links: ReadonlyArray<{ readonly traceId: string; readonly spanId: string }>
  readonly resource: Record<string, unknown>
}

const plain = (value: AnyValue): unknown =>
  value.stringValue ?? value.boolValue ?? (value.intValue === undefined ? value.doubleValue : Number(value.intValue))

const record = (attributes: ReadonlyArray<KeyValue> | undefined) =>
  Object.fromEntries((attributes ?? []).map(({ key, value }) => [key, plain(value)]))

/**
 * A fake OpenTelemetry collector on 127.0.0.1: accepts OTLP/HTTP JSON on
 * `POST /v1/traces` and keeps every span. Anything else is answered 404 and
 * counted in `refused`.
 */
export class Collector {
  readonly spans: Array<CollectedSpan> = []
  readonly refused: Array<string> = []
  private constructor(private readonly server: Server, readonly port: number) {}

  static async start(): Promise<Collector> {
    const server = createServer()
    const collector = new Collector(server, await listenOnLoopback(server))
    server.on("request", (req, res) => {
      let body = ""
      req.setEncoding("utf8")
      req.on("data", (chunk) => (body += chunk))
      req.on("end", () => {
        if (req.method !== "POST" || req.url !== "/v1/traces" || req.headers["content-type"] !== "application/json") {
          collector.refused.push(`${req.method} ${req.url} ${req.headers["content-type"]}`)
          res.writeHead(404).end()
          return
        }
        const data = JSON.parse(body) as {
          resourceSpans: Array<{ resource: { attributes: Array<KeyValue> }; scopeSpans: Array<{ spans: Array<any> }> }>
        }
        for (const { resource, scopeSpans } of data.resourceSpans) {
          for (const { spans } of scopeSpans) {
            for (const span of spans) {
              collector.spans.push({
                ...span,
                attributes: record(span.attributes),
                links: span.links ?? [],
                resource: record(resource.attributes)
              })
            }
          }
        }
        res.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    return collector
  }

  /** What `OTEL_EXPORTER_OTLP_ENDPOINT` should say. */
  get endpoint() {
    return `http://127.0.0.1:${this.port}`
  }

  trace(traceId: string) {
    return this.spans.filter((span) => span.traceId === traceId)
  }

  /** Resolves with the first span `match` accepts, once it has arrived. */
  waitFor(what: string, match: (span: CollectedSpan) => boolean, timeoutMs = 10_000) {
    return eventually(what, async () => this.spans.find(match), {
      timeoutMs,
      everyMs: 50,
      describe: () => `spans so far: ${this.spans.map((span) => span.name).join(", ")}`
    })
  }

  close() {
    this.server.closeAllConnections()
    return new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}

/**
 * A collector that accepts connections, reads what is sent and never answers
 * (decision 0019): counts the connections open now, the most ever open at
 * once, and all it accepted.
 */
export class SilentCollector {
  private readonly open = new Set<Socket>()
  mostOpen = 0
  accepted = 0
  bytes = 0
  private constructor(private readonly server: TcpServer, readonly port: number) {}

  static async start(): Promise<SilentCollector> {
    const server = createTcpServer()
    const collector = new SilentCollector(server, await listenOnLoopback(server))
    server.on("connection", (socket) => collector.track(socket))
    return collector
  }

  private track(socket: Socket) {
    this.accepted++
    this.open.add(socket)
    this.mostOpen = Math.max(this.mostOpen, this.open.size)
    socket.on("data", (chunk) => (this.bytes += chunk.length))
    socket.on("error", () => {})
    socket.on("close", () => this.open.delete(socket))
  }

  get openNow() {
    return this.open.size
  }

  get endpoint() {
    return `http://127.0.0.1:${this.port}`
  }

  close() {
    for (const socket of this.open) socket.destroy()
    return new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}

/**
 * A collector that answers every export with 200 and a body that never ends,
 * written as fast as the client reads it: counts the answers begun, those
 * still open (the client has not hung up) and the bytes sent.
 */
export class FloodingCollector {
  answers = 0
  openAnswers = 0
  bytes = 0
  private constructor(private readonly server: Server, readonly port: number) {}

  static async start(): Promise<FloodingCollector> {
    const server = createServer()
    const collector = new FloodingCollector(server, await listenOnLoopback(server))
    const chunk = Buffer.from(`{"partialSuccess":{"errorMessage":"${"x".repeat(64 * 1024)}`)
    server.on("request", (req, res) => {
      req.resume()
      collector.answers++
      collector.openAnswers++
      res.once("close", () => collector.openAnswers--)
      res.writeHead(200, { "content-type": "application/json" })
      const pump = () => {
        while (!res.destroyed) {
          collector.bytes += chunk.length
          if (!res.write(chunk)) return void res.once("drain", pump)
        }
      }
      pump()
    })
    return collector
  }

  get endpoint() {
    return `http://127.0.0.1:${this.port}`
  }

  close() {
    this.server.closeAllConnections()
    return new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}
