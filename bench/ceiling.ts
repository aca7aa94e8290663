/**
 * `npm run bench:ceiling`: what the HTTP stack alone costs, with no database,
 * Redis or sanitizer. Three servers answer `GET /ping?organizationId=x` with
 * the same small JSON array (the size of a `/boards` answer), loaded
 * alternately like `load/load.ts` does:
 * - raw `node:http`;
 * - an Effect HttpRouter route (`HttpRouter.add`), the same Node server;
 * - an Effect HttpApi endpoint with a query schema and a middleware that
 *   sets a header, the shape of Hearken's `GET /boards`.
 * The ratio of the last to the first is the ceiling for Hearken's `/boards`
 * ratio against the baseline: what the framework costs per request before
 * any of Hearken's own work.
 */
import { NodeHttpServer } from "@effect/platform-node"
import autocannon from "autocannon"
import { Effect, Layer, Schema } from "effect"
import { HttpEffect, HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware } from "effect/http-api"
import { fork } from "node:child_process"
import { createServer } from "node:http"
import { freePort } from "../test/support/net.ts"
import { serverNodeFlags } from "./support.ts"

const body = JSON.stringify(Array.from({ length: 8 }, (_, i) => ({
  id: `b_${i}`, name: `Board ${i}`, slug: `board-${i}`, organizationId: "org_x",
  createdAt: "2026-01-01T00:00:00.000Z", updatedAt: "2026-01-01T00:00:00.000Z"
})))
const bytes = new TextEncoder().encode(body)

const kind = process.argv[2]
if (kind !== undefined) {
  const port = Number(process.argv[3])
  if (kind === "raw") {
    createServer((req, res) => {
      const url = new URL(req.url!, "http://x")
      if (url.searchParams.get("organizationId") === null) return res.writeHead(400).end()
      res.writeHead(200, { "content-type": "application/json", "content-length": bytes.byteLength, "ratelimit-limit": "120" })
      res.end(bytes)
    }).listen(port, "127.0.0.1", () => process.send!("ready"))
  } else if (kind === "router") {
    const route = HttpRouter.add("GET", "/ping", HttpServerResponse.uint8Array(bytes, { contentType: "application/json" }))
    Layer.launch(HttpRouter.serve(route, { disableLogger: true }).pipe(
      Layer.provide(NodeHttpServer.layer(createServer, { port, host: "127.0.0.1" }))
    )).pipe(Effect.runFork)
    setTimeout(() => process.send!("ready"), 1_000)
  } else {
    class Limit extends HttpApiMiddleware.Service<Limit>()("Limit") {}
    const Api = HttpApi.make("ceiling").add(HttpApiGroup.make("g").add(
      HttpApiEndpoint.get("ping", "/ping", { query: { organizationId: Schema.String }, success: Schema.Array(Schema.Unknown) })
    ).middleware(Limit))
    const LimitLive = Layer.succeed(Limit, (httpEffect) =>
      HttpEffect.appendPreResponseHandler((_, response) =>
        Effect.succeed(HttpServerResponse.setHeaders(response, { "ratelimit-limit": "120" }))).pipe(Effect.andThen(httpEffect)))
    const Handlers = HttpApiBuilder.group(Api, "g", (handlers) =>
      Effect.succeed(handlers.handle("ping", () => Effect.succeed(HttpServerResponse.uint8Array(bytes, { contentType: "application/json" })))))
    Layer.launch(HttpRouter.serve(HttpApiBuilder.layer(Api).pipe(Layer.provide(Handlers), Layer.provide(LimitLive)), { disableLogger: true }).pipe(
      Layer.provide(NodeHttpServer.layer(createServer, { port, host: "127.0.0.1" }))
    )).pipe(Effect.runFork)
    setTimeout(() => process.send!("ready"), 1_000)
  }
} else {
  const servers: Array<{ name: string; url: string; stop: () => void }> = []
  for (const name of ["raw", "router", "httpapi"]) {
    const port = await freePort()
    const child = fork(import.meta.filename, [name, String(port)], { execArgv: serverNodeFlags })
    await new Promise((resolve) => child.once("message", resolve))
    servers.push({ name, url: `http://127.0.0.1:${port}/ping?organizationId=org_x`, stop: () => child.kill() })
  }
  const load = (url: string, duration: number) =>
    autocannon({ url, connections: 50, duration }).then((r) => ({ rps: r.requests.average, p99: r.latency.p99, non2xx: r.non2xx }))
  const results = new Map<string, Array<number>>()
  for (let round = 0; round < 2; round++) {
    for (const server of servers) {
      await load(server.url, 2)
      const r = await load(server.url, 8)
      results.set(server.name, [...(results.get(server.name) ?? []), r.rps])
      console.log(`${server.name} round ${round + 1}: ${Math.round(r.rps)} req/s, p99 ${r.p99} ms, non-2xx ${r.non2xx}`)
    }
  }
  const mean = (name: string) => results.get(name)!.reduce((a, b) => a + b, 0) / results.get(name)!.length
  console.log(`router / raw ${(mean("router") / mean("raw")).toFixed(2)}, HttpApi / raw ${(mean("httpapi") / mean("raw")).toFixed(2)}`)
  for (const server of servers) server.stop()
}
