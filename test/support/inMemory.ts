import { HearkenApi, RateLimit } from "@hearken/api/effect"
import { ConfigProvider, Context, Effect, Layer } from "effect"
import { HttpClientRequest, HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse, UrlParams } from "effect/http"
import { HttpApiMiddleware, HttpApiTest } from "effect/http-api"
import { mkdtemp, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { SqlClient } from "effect/sql"
import { Core } from "../../packages/server/src/App.js"
import * as ServerConfig from "../../packages/server/src/config/ServerConfig.js"
import * as ApiDocs from "../../packages/server/src/docs/Docs.js"
import * as RequestErrors from "../../packages/server/src/http/RequestErrors.js"
import * as WidgetApi from "../../packages/server/src/http/WidgetApi.js"
import { RateLimitGate } from "../../packages/server/src/rate-limit/RateLimitGate.js"
import * as RateLimitMiddleware from "../../packages/server/src/rate-limit/RateLimitMiddleware.js"
import { RateLimiter } from "../../packages/server/src/rate-limit/RateLimiter.js"
import { createDatabase, databaseEnv, type TestDatabase } from "./database.js"

/**
 * The real widget API in memory: the services `Core` builds (migrated and
 * seeded through the real importer, on a fresh PostgreSQL database), the
 * `widget` handlers, `RequestErrors` and the RateLimit middleware over the
 * limiter `App.ts` picks (in-process without `REDIS_URL`), called through
 * `HttpApiTest`'s typed client: the server's routing, decoding, middlewares
 * and encoding, with no socket. What needs a socket (CORS, framing, Node's
 * own refusals, connections) stays with the suites that start a server.
 *
 * The requests go through the typed client with `responseMode:
 * "response-only"`, and a client-side RateLimit middleware sends what the
 * test says instead (`send`): any query string, any headers, any JSON body
 * or raw text, so a test asserts the same statuses and bodies a client
 * without the schemas sees. An in-memory request has no peer address: with
 * `TRUST_PROXY=1` a test gives its client's address as `X-Forwarded-For`;
 * without it every request shares the `unknown` bucket.
 */

/** The test database under the in-memory server, for a test's own statements. */
export class TestDb extends Context.Service<TestDb, TestDatabase>()("test/TestDb") {}

/** What the next request carries instead of the typed client's own query, body and headers. */
interface Sent {
  /** The query string, as `?a=1&a=2` (or `""`: none). */
  readonly search?: string | undefined
  /** A value is sent as JSON, a string as it is (with `content-type: application/json`). */
  readonly body?: unknown
  readonly headers?: Record<string, string> | undefined
}

const Sending = Context.Reference<Sent>("test/inMemory/Sending", { defaultValue: () => ({}) })

/** The client-side half of RateLimit, on every widget endpoint: it rewrites the request as `Sending` says. */
const Rewrite = HttpApiMiddleware.layerClient(RateLimit, ({ next, request }) =>
  Effect.flatMap(Sending, (sent) => {
    let rewritten = HttpClientRequest.setHeaders(request, sent.headers ?? {})
    if (sent.search !== undefined) {
      // A new GET on the same URL: `setUrlParams` would keep the parameters `sent.search` leaves out.
      rewritten = HttpClientRequest.get(rewritten.url, {
        headers: rewritten.headers,
        urlParams: UrlParams.fromInput(new URLSearchParams(sent.search))
      })
    }
    if (sent.body !== undefined) {
      rewritten = typeof sent.body === "string"
        ? HttpClientRequest.bodyText(rewritten, sent.body, "application/json")
        : HttpClientRequest.bodyJsonUnsafe(rewritten, sent.body)
    }
    return next(rewritten)
  }))

const makeClient = HttpApiTest.groups(HearkenApi, ["widget"]).pipe(Effect.provide(Rewrite))

/** The typed in-memory client of the `widget` group. */
export class Widget extends Context.Service<Widget, Effect.Success<typeof makeClient>>()("test/inMemory/Widget") {}

/** `/docs`, `/docs/scalar.js` and `/docs/openapi.json`, in memory: a web `Request` in, its answer out. */
export class DocsRoutes extends Context.Service<DocsRoutes, {
  readonly fetch: (request: Request) => Effect.Effect<Response>
}>()("test/inMemory/DocsRoutes") {}

export interface Answer {
  readonly status: number
  readonly headers: Headers
  /** The body as text. */
  readonly text: string
  /** The body parsed as JSON; the text when it is not JSON; undefined when empty. */
  readonly body: any
}

const parse = (text: string): unknown => {
  if (text === "") return undefined
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

type Endpoint = "boards" | "updates" | "feedback" | "suggestions"

/**
 * One request to a widget endpoint through the in-memory client: GETs take
 * `search` (the query string, e.g. `?organizationId=org_acme`), POSTs take
 * `body` (a value sent as JSON, a string sent as it is); `headers` are added.
 */
export const send = (endpoint: Endpoint, sent: Sent = {}): Effect.Effect<Answer, never, Widget> =>
  Effect.gen(function*() {
    const client = (yield* Widget).widget
    // The typed arguments are placeholders: `Sending` replaces the query or the body they would encode.
    const placeholder = { organizationId: "placeholder", boardId: "placeholder", title: "placeholder", content: "" }
    const response = yield* (endpoint === "boards" || endpoint === "updates"
      ? client[endpoint]({ query: { organizationId: "placeholder" }, responseMode: "response-only" })
      : client[endpoint]({ payload: placeholder, responseMode: "response-only" })).pipe(
        Effect.provideService(Sending, { search: endpoint === "boards" || endpoint === "updates" ? sent.search ?? "" : undefined, ...sent })
      )
    const text = yield* response.text
    return { status: response.status, headers: new Headers(response.headers), text, body: parse(text) }
  }).pipe(Effect.orDie)

/** `send` for a GET: `path` is the endpoint and its query string, e.g. `boards?organizationId=org_acme`. */
export const get = (path: string, headers: Record<string, string> = {}) => {
  const at = path.indexOf("?")
  const endpoint = (at === -1 ? path : path.slice(0, at)) as "boards" | "updates"
  return send(endpoint, { search: at === -1 ? "" : path.slice(at), headers })
}

/** `send` for a POST of `body` (a value is JSON-encoded, a string is sent as it is). */
export const post = (endpoint: "feedback" | "suggestions", body: unknown, headers: Record<string, string> = {}) =>
  send(endpoint, { body, headers })

/** Runs a promise-returning query on the test database. */
export const query = <T = Record<string, unknown>>(
  f: (sql: SqlClient.SqlClient) => Effect.Effect<ReadonlyArray<T>, unknown>
): Effect.Effect<ReadonlyArray<T>, never, TestDb> => Effect.flatMap(TestDb, (db) => Effect.promise(() => db.query<T>(f)))

/**
 * The in-memory server over a fresh database seeded with `fixture`. `env` is
 * the environment it sees (no `process.env`), over the one the socket
 * suites' `startServer` gives: `LOG_LEVEL=error` and a generous
 * `RATE_LIMIT_MULTIPLIER`. Provides `Widget`, `DocsRoutes`, `TestDb` and
 * every service `Core` builds (the tests may read them: `SqlClient`,
 * `PublicUpdates`…).
 */
export const inMemoryServer = (fixture: unknown, env: Record<string, string> = {}) =>
  Layer.unwrap(Effect.gen(function*() {
    const db = yield* Effect.acquireRelease(Effect.promise(createDatabase), (db) => Effect.promise(db.drop))
    const dir = yield* Effect.promise(() => mkdtemp(join(tmpdir(), "hearken-in-memory-")))
    yield* Effect.promise(() => writeFile(join(dir, "fixture.json"), JSON.stringify(fixture)))
    const provider = ConfigProvider.fromEnv({
      env: { ...databaseEnv(db.url), SEED_FILE: join(dir, "fixture.json"), LOG_LEVEL: "error", RATE_LIMIT_MULTIPLIER: "1000", ...env }
    })
    const Base = Core.pipe(Layer.provideMerge(ServerConfig.layer), Layer.provide(ConfigProvider.layer(provider)))
    // One limiter for the API and `/docs`, as in `App.ts`.
    const RateLimiting = RateLimitGate.layerNoDeps.pipe(Layer.provide(RateLimiter.layer))
    const Middlewares = Layer.mergeAll(RequestErrors.layer, RateLimitMiddleware.layer)
    // The handlers need the middlewares when their routes are built, and the client's pipeline needs them again: provideMerge.
    const Handlers = WidgetApi.layer.pipe(Layer.provideMerge(Middlewares), Layer.provideMerge(HttpServer.layerServices))
    const Client = Layer.effect(Widget, makeClient)
    const Docs = Layer.effect(DocsRoutes, Effect.gen(function*() {
      const handle = yield* HttpRouter.toHttpEffect(ApiDocs.layer)
      return DocsRoutes.of({
        fetch: (request) =>
          handle.pipe(
            Effect.provideService(HttpServerRequest.HttpServerRequest, HttpServerRequest.fromWeb(request)),
            Effect.scoped,
            Effect.map((response) => HttpServerResponse.toWeb(response)),
            Effect.orDie
          )
      })
    }))
    return Layer.mergeAll(Client, Docs).pipe(
      Layer.provideMerge(Handlers),
      Layer.provideMerge(RateLimiting),
      Layer.provideMerge(Base),
      Layer.provideMerge(Layer.succeed(TestDb, db))
    )
  }))
