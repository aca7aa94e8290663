import { describe, expect, layer } from "@effect/vitest"
import {
  Board,
  CreatedPost,
  DataValidationError,
  type FeedbackRequest,
  HearkenApi,
  NotFoundError,
  RateLimit,
  SuggestionMatch,
  type SuggestionsRequest,
  UnauthorizedError,
  Update
} from "@hearken/api/effect"
import { ConfigProvider, Context, Effect, Layer, Logger, Schema, type Scope } from "effect"
import { HttpClientRequest, type HttpClientResponse, HttpServer, HttpServerResponse } from "effect/http"
import { HttpApiMiddleware, HttpApiTest } from "effect/http-api"
import { TestClock } from "effect/testing"
import { PublicBoards } from "../packages/server/dist/boards/PublicBoards.js"
import * as ServerConfig from "../packages/server/dist/config/ServerConfig.js"
import { Feedback, type FeedbackError } from "../packages/server/dist/feedback/Feedback.js"
import * as RequestErrors from "../packages/server/dist/http/RequestErrors.js"
import * as WidgetApi from "../packages/server/dist/http/WidgetApi.js"
import { RateLimitGate } from "../packages/server/dist/rate-limit/RateLimitGate.js"
import * as RateLimitMiddleware from "../packages/server/dist/rate-limit/RateLimitMiddleware.js"
import { RateLimiter } from "../packages/server/dist/rate-limit/RateLimiter.js"
import { Suggestions } from "../packages/server/dist/suggestions/Suggestions.js"
import { PublicUpdates } from "../packages/server/dist/updates/PublicUpdates.js"

/**
 * The widget handlers and their middlewares (RequestErrors, RateLimit) through
 * `HttpApiTest`'s in-memory typed client: the real request decoding, routing,
 * middlewares and response encoding, with no socket and no database. The
 * services behind the handlers are stubs that record their calls; the rate
 * limiter is the in-process one, on the TestClock. The real-HTTP suites
 * (validation, errors, rate-limit, idempotency…) still cover what only a
 * server shows: sockets, framing, CORS, Redis.
 *
 * What the typed client cannot say is said by a client-side RateLimit
 * middleware (`caller`): headers the endpoints do not declare
 * (Idempotency-Key, If-None-Match), a body its schemas would refuse to encode,
 * and the client's address. An in-memory request has no socket, hence no peer
 * address: each test is its own client through X-Forwarded-For, trusted one hop
 * (`TRUST_PROXY=1`), so that the limiter's buckets do not leak between tests.
 */

type Call =
  | { readonly service: "boards" | "updates"; readonly organizationId: string; readonly ifNoneMatch: string | undefined }
  | { readonly service: "feedback"; readonly request: FeedbackRequest; readonly idempotencyKey: string | undefined }
  | { readonly service: "suggestions"; readonly request: SuggestionsRequest }

/** The stubs' record of calls, and what they do instead of their canned answer while a test says so. */
class Stubs extends Context.Service<Stubs, {
  readonly calls: Array<Call>
  /** Every stub fails with `failure` (a typed error, or a defect) until the test's scope closes; calls are still recorded. */
  readonly failWith: (failure: Effect.Effect<never, FeedbackError>) => Effect.Effect<void, never, Scope.Scope>
  readonly failure: () => Effect.Effect<never, FeedbackError> | undefined
}>()("test/Stubs") {
  static readonly layer = Layer.sync(Stubs, () => {
    const calls: Array<Call> = []
    let failure: Effect.Effect<never, FeedbackError> | undefined
    return Stubs.of({
      calls,
      failure: () => failure,
      failWith: (next) =>
        Effect.acquireRelease(Effect.sync(() => void (failure = next)), () => Effect.sync(() => void (failure = undefined)))
    })
  })
}

const at = "2026-01-01T00:00:00.000Z"
const boardOf = (organizationId: string) =>
  new Board({ id: "b_feat", name: "Feature requests", slug: "feature-requests", organizationId, createdAt: at, updatedAt: at })
const updateOf = (organizationId: string) =>
  new Update({
    id: `u_${organizationId}`,
    title: "Dark mode",
    slug: "dark-mode",
    content: "<p>Dark mode is here.</p>",
    excerpt: "Dark mode is here.",
    imageUrl: null,
    publishedAt: at
  })
const createdOf = (request: FeedbackRequest) =>
  new CreatedPost({ id: "p_1", slug: "a-post", title: request.title, boardId: request.boardId, organizationId: request.organizationId, createdAt: at })
const matchOf = (request: SuggestionsRequest) =>
  new SuggestionMatch({ id: "p_2", title: `Like ${request.title}`, excerpt: "An older post", slug: "an-older-post" })

const encodeBoards = Schema.encodeSync(Schema.Array(Board))
const encodeUpdates = Schema.encodeSync(Schema.Array(Update))

/** PublicBoards, PublicUpdates, Feedback and Suggestions over `Stubs`: canned answers made from what they were given. */
const StubServices = Layer.unwrap(Effect.gen(function*() {
  const stubs = yield* Stubs
  /** The failure a test set, or `answer`; the stubs with no error channel turn a typed failure into a defect. */
  const respond = <A>(call: Call, answer: () => A) =>
    Effect.suspend(() => {
      stubs.calls.push(call)
      const failure = stubs.failure()
      return failure === undefined ? Effect.sync(answer) : failure
    })
  return Layer.mergeAll(
    Layer.succeed(PublicBoards, PublicBoards.of({
      answer: (organizationId, ifNoneMatch) =>
        respond({ service: "boards", organizationId, ifNoneMatch }, () =>
          HttpServerResponse.jsonUnsafe(encodeBoards([boardOf(organizationId)]), { headers: { etag: "\"boards\"" } })).pipe(Effect.orDie)
    })),
    Layer.succeed(PublicUpdates, PublicUpdates.of({
      answer: (organizationId, ifNoneMatch) =>
        respond({ service: "updates", organizationId, ifNoneMatch }, () =>
          HttpServerResponse.jsonUnsafe(encodeUpdates([updateOf(organizationId)]), { headers: { etag: "\"updates\"" } })).pipe(Effect.orDie)
    })),
    Layer.succeed(Feedback, Feedback.of({
      create: (request, idempotencyKey) => respond({ service: "feedback", request, idempotencyKey }, () => createdOf(request))
    })),
    Layer.succeed(Suggestions, Suggestions.of({
      suggest: (request) => respond({ service: "suggestions", request }, () => [matchOf(request)]).pipe(Effect.orDie),
      lexical: () => Effect.die("not used by the handlers"),
      rank: () => Effect.die("not used by the handlers")
    }))
  )
}))

/** One trusted proxy hop, so each test is its own client IP (X-Forwarded-For); the published limits, unscaled. */
const TestConfig = ServerConfig.layer.pipe(
  Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: { RATE_LIMIT_MULTIPLIER: "1", TRUST_PROXY: "1" } })))
)

/** The middlewares as `App.ts` composes them, over the in-process limiter. */
const Middlewares = Layer.mergeAll(RequestErrors.layer, RateLimitMiddleware.layer).pipe(
  Layer.provide(RateLimitGate.layerNoDeps),
  Layer.provide(RateLimiter.layerMemory),
  Layer.provide(TestConfig)
)

/** What the server logs, for the 500s. */
const logs: Array<{ readonly level: string; readonly message: unknown; readonly cause: string }> = []
const Logs = Logger.layer([Logger.make(({ logLevel, message, cause }) => void logs.push({ level: logLevel, message, cause: String(cause) }))])

/** The handlers need the middlewares when their routes are built, and the client's pipeline needs them again: provideMerge. */
const Env = WidgetApi.layer.pipe(
  Layer.provide(StubServices),
  Layer.provideMerge(Middlewares),
  Layer.provideMerge(Stubs.layer),
  Layer.merge(HttpServer.layerServices),
  Layer.merge(Logs)
)

const makeClient = HttpApiTest.groups(HearkenApi, ["widget"])

/**
 * The caller, as a client-side RateLimit middleware: its IP (X-Forwarded-For),
 * extra headers, and optionally a raw JSON body sent instead of the typed
 * payload (what a client without the schemas may send). It keeps every
 * response it gets, for statuses and headers.
 */
const caller = (ip: string, options: { readonly headers?: Record<string, string>; readonly rawBody?: unknown } = {}) => {
  const responses: Array<HttpClientResponse.HttpClientResponse> = []
  const layer = HttpApiMiddleware.layerClient(RateLimit, ({ next, request }) => {
    let sent = HttpClientRequest.setHeaders(request, { "x-forwarded-for": ip, ...options.headers })
    if (options.rawBody !== undefined) sent = HttpClientRequest.bodyJsonUnsafe(sent, options.rawBody)
    return next(sent).pipe(Effect.tap((response) => Effect.sync(() => responses.push(response))))
  })
  return { layer, responses, statuses: () => responses.map((r) => r.status) }
}

/**
 * A failure as its body shows it: its tag and fields, message included.
 * `toEqual` on two errors skips their message (not enumerable), so the
 * assertions compare this instead.
 */
const fieldsOf = (error: object) => ({ ...error, message: (error as { readonly message?: unknown }).message })

const feedback = { organizationId: "org_acme", boardId: "b_feat", title: "Dark mode", content: "Please add dark mode" } as const
const suggestion = { organizationId: "org_acme", boardId: "b_feat", title: "Dark mode", content: "" } as const

layer(Env)("widget handlers and middlewares through HttpApiTest", (it) => {
  const reset = Effect.flatMap(Stubs, (stubs) => Effect.sync(() => void stubs.calls.splice(0)))

  it.effect("GET /boards and GET /updates pass organizationId (and If-None-Match) to PublicBoards and PublicUpdates; the answers decode", () => {
    const me = caller("203.0.113.1", { headers: { "if-none-match": "\"old\"" } })
    return Effect.gen(function*() {
      const { calls } = yield* Stubs
      yield* reset
      const client = yield* makeClient
      expect(yield* client.widget.boards({ query: { organizationId: "org_one" } })).toEqual([boardOf("org_one")])
      expect(yield* client.widget.updates({ query: { organizationId: "org_two" } })).toEqual([updateOf("org_two")])
      expect(calls).toEqual([
        { service: "boards", organizationId: "org_one", ifNoneMatch: "\"old\"" },
        { service: "updates", organizationId: "org_two", ifNoneMatch: "\"old\"" }
      ])
      expect(me.statuses()).toEqual([200, 200])
      expect(me.responses.map((r) => r.headers["etag"])).toEqual(["\"boards\"", "\"updates\""])
    }).pipe(Effect.provide(me.layer))
  })

  it.effect("POST /feedback passes the decoded payload, metadata and token included, to Feedback.create; the CreatedPost decodes", () => {
    const me = caller("203.0.113.2")
    return Effect.gen(function*() {
      const { calls } = yield* Stubs
      yield* reset
      const client = yield* makeClient
      const payload = { ...feedback, metadata: { plan: "pro" }, token: "a.b.c" }
      expect(yield* client.widget.feedback({ payload })).toEqual(createdOf(payload))
      expect(calls).toEqual([{ service: "feedback", request: payload, idempotencyKey: undefined }])
      expect(me.statuses()).toEqual([200])
    }).pipe(Effect.provide(me.layer))
  })

  it.effect("POST /suggestions passes the decoded payload to Suggestions.suggest; the matches decode", () => {
    const me = caller("203.0.113.3")
    return Effect.gen(function*() {
      const { calls } = yield* Stubs
      yield* reset
      const client = yield* makeClient
      expect(yield* client.widget.suggestions({ payload: suggestion })).toEqual([matchOf(suggestion)])
      expect(calls).toEqual([{ service: "suggestions", request: suggestion }])
      expect(me.statuses()).toEqual([200])
    }).pipe(Effect.provide(me.layer))
  })

  describe("a handler's failure", () => {
    it.effect.each([
      ["NotFoundError", new NotFoundError({ message: "boardId: no such board in this organization" }), 404, "203.0.113.10"],
      ["UnauthorizedError", new UnauthorizedError({ message: "token: invalid signature" }), 401, "203.0.113.11"],
      ["DataValidationError", new DataValidationError({ message: "boardId: feedback cannot be submitted to a private board" }), 400, "203.0.113.12"]
    ] as const)("%s from Feedback.create surfaces as itself, with its status and message", ([tag, error, status, ip]) => {
      const me = caller(ip)
      return Effect.gen(function*() {
        const stubs = yield* Stubs
        yield* reset
        yield* stubs.failWith(Effect.fail(error))
        const client = yield* makeClient
        const failed = yield* Effect.flip(client.widget.feedback({ payload: feedback }))
        expect(failed).toBeInstanceOf(error.constructor)
        expect(fieldsOf(failed)).toEqual({ _tag: tag, message: error.message })
        expect(me.statuses()).toEqual([status])
        expect(stubs.calls).toHaveLength(1)
      }).pipe(Effect.provide(me.layer))
    })

    it.effect("a defect becomes InternalServerError saying nothing of it (no stack, no SQL), logged once with its cause", () => {
      const me = caller("203.0.113.20")
      return Effect.gen(function*() {
        const stubs = yield* Stubs
        yield* reset
        logs.splice(0)
        const sqlError = new Error("relation \"posts\" does not exist: SELECT id, title FROM posts WHERE board_id = $1")
        yield* stubs.failWith(Effect.die(sqlError))
        const client = yield* makeClient
        const failed = yield* Effect.flip(client.widget.suggestions({ payload: suggestion }))
        expect(fieldsOf(failed)).toEqual({ _tag: "InternalServerError", message: "Internal server error" })
        expect(me.statuses()).toEqual([500])
        // The body as sent, not as the client's schema keeps it: nothing but the tag and the message.
        const raw = yield* client.widget.suggestions({ payload: suggestion, responseMode: "response-only" })
        expect(raw.status).toBe(500)
        expect(yield* raw.json).toEqual({ _tag: "InternalServerError", message: "Internal server error" })
        expect(logs.map((l) => [l.level, l.message])).toEqual([
          ["Error", ["Unexpected failure while handling a request"]],
          ["Error", ["Unexpected failure while handling a request"]]
        ])
        expect(logs[0]!.cause).toContain("SELECT id, title FROM posts")
      }).pipe(Effect.provide(me.layer))
    })
  })

  describe("payload validation (RequestErrors), before the handler's service is called", () => {
    const emoji = "😀" // one code point, two UTF-16 units

    it.effect("a title of 200 code points passes; 201 is DataValidationError naming title", () => {
      const me = caller("203.0.113.30")
      const tooLong = caller("203.0.113.31", { rawBody: { ...suggestion, title: emoji.repeat(201) } })
      return Effect.gen(function*() {
        const stubs = yield* Stubs
        yield* reset
        const ok = yield* makeClient.pipe(
          Effect.flatMap((client) => client.widget.suggestions({ payload: { ...suggestion, title: emoji.repeat(200) } })),
          Effect.provide(me.layer)
        )
        expect(ok).toHaveLength(1)
        expect(stubs.calls).toHaveLength(1)
        // The typed client will not even encode it: nothing is sent.
        const refused = yield* makeClient.pipe(
          Effect.flatMap((client) => client.widget.suggestions({ payload: { ...suggestion, title: emoji.repeat(201) } })),
          Effect.flip,
          Effect.provide(me.layer)
        )
        expect(refused._tag).toBe("SchemaError")
        expect(me.statuses()).toEqual([200])
        // Sent anyway, as a client without the schemas would: the server refuses it.
        const failed = yield* makeClient.pipe(
          Effect.flatMap((client) => client.widget.suggestions({ payload: suggestion })),
          Effect.flip,
          Effect.provide(tooLong.layer)
        )
        expect(fieldsOf(failed)).toEqual({ _tag: "DataValidationError", message: "title: Expected a string with at most 200 code points" })
        expect(tooLong.statuses()).toEqual([400])
        expect(stubs.calls).toHaveLength(1)
      })
    })

    it.effect("a missing field is DataValidationError naming it", () => {
      const { title: _, ...withoutTitle } = feedback
      const me = caller("203.0.113.32", { rawBody: withoutTitle })
      return Effect.gen(function*() {
        const stubs = yield* Stubs
        yield* reset
        const client = yield* makeClient
        const failed = yield* Effect.flip(client.widget.feedback({ payload: feedback }))
        expect(fieldsOf(failed)).toEqual({ _tag: "DataValidationError", message: "title: is required" })
        expect(me.statuses()).toEqual([400])
        expect(stubs.calls).toEqual([])
      }).pipe(Effect.provide(me.layer))
    })
  })

  describe("Idempotency-Key on POST /feedback (read by the handler, sent through a client middleware)", () => {
    it.effect("a valid key reaches Feedback.create; a key with a space is DataValidationError and creates nothing", () => {
      const good = caller("203.0.113.40", { headers: { "idempotency-key": "retry-7f3a" } })
      const bad = caller("203.0.113.41", { headers: { "idempotency-key": "two words" } })
      return Effect.gen(function*() {
        const stubs = yield* Stubs
        yield* reset
        const send = makeClient.pipe(Effect.flatMap((client) => client.widget.feedback({ payload: feedback })))
        expect(yield* Effect.provide(send, good.layer)).toEqual(createdOf(feedback))
        expect(stubs.calls).toEqual([{ service: "feedback", request: feedback, idempotencyKey: "retry-7f3a" }])
        const failed = yield* send.pipe(Effect.flip, Effect.provide(bad.layer))
        expect(fieldsOf(failed)).toEqual({ _tag: "DataValidationError", message: "Idempotency-Key: Expected 1 to 255 visible ASCII characters" })
        expect(bad.statuses()).toEqual([400])
        expect(stubs.calls).toHaveLength(1)
      })
    })
  })

  describe("RateLimit, on the in-process limiter and the TestClock", () => {
    it.effect("POST /suggestions: 5 a minute, the 6th is RateLimitExceededError with Retry-After 12; one request back every 12 s", () => {
      const me = caller("198.51.100.1")
      const other = caller("198.51.100.2")
      return Effect.gen(function*() {
        const stubs = yield* Stubs
        yield* reset
        const client = yield* makeClient
        for (let i = 0; i < 5; i++) yield* client.widget.suggestions({ payload: suggestion })
        const limited = yield* Effect.flip(client.widget.suggestions({ payload: suggestion }))
        expect(fieldsOf(limited)).toEqual({ _tag: "RateLimitExceededError", message: "At most 5 requests per minute; retry in 12 s" })
        expect(me.statuses()).toEqual([200, 200, 200, 200, 200, 429])
        expect(me.responses.map((r) => r.headers["ratelimit-remaining"])).toEqual(["4", "3", "2", "1", "0", "0"])
        const refusal = me.responses[5]!.headers
        expect([refusal["ratelimit-limit"], refusal["retry-after"], refusal["ratelimit-reset"]]).toEqual(["5", "12", "60"])
        expect(stubs.calls).toHaveLength(5)

        // Another client IP has its own budget.
        expect(yield* Effect.provide(makeClient.pipe(Effect.flatMap((c) => c.widget.suggestions({ payload: suggestion }))), other.layer))
          .toEqual([matchOf(suggestion)])

        yield* TestClock.adjust(11_999)
        expect(fieldsOf(yield* Effect.flip(client.widget.suggestions({ payload: suggestion }))))
          .toEqual({ _tag: "RateLimitExceededError", message: "At most 5 requests per minute; retry in 1 s" })
        yield* TestClock.adjust(1)
        expect(yield* client.widget.suggestions({ payload: suggestion })).toEqual([matchOf(suggestion)])
        expect(fieldsOf(yield* Effect.flip(client.widget.suggestions({ payload: suggestion }))))
          .toEqual({ _tag: "RateLimitExceededError", message: "At most 5 requests per minute; retry in 12 s" })
        expect(me.statuses().slice(6)).toEqual([429, 200, 429])
        expect(stubs.calls).toHaveLength(7)
      }).pipe(Effect.provide(me.layer))
    })

    it.effect("runs before request decoding: refused bodies spend the budget too, and the 6th valid request is refused", () => {
      const invalid = caller("198.51.100.3", { rawBody: { ...suggestion, title: 42 } })
      const valid = caller("198.51.100.3")
      return Effect.gen(function*() {
        const stubs = yield* Stubs
        yield* reset
        const send = makeClient.pipe(Effect.flatMap((client) => client.widget.suggestions({ payload: suggestion })), Effect.flip)
        for (let i = 0; i < 5; i++) {
          expect(fieldsOf(yield* Effect.provide(send, invalid.layer))).toEqual({ _tag: "DataValidationError", message: "title: Expected string" })
        }
        expect(fieldsOf(yield* Effect.provide(send, valid.layer))).toEqual({ _tag: "RateLimitExceededError", message: "At most 5 requests per minute; retry in 12 s" })
        expect([...invalid.statuses(), ...valid.statuses()]).toEqual([400, 400, 400, 400, 400, 429])
        expect(stubs.calls).toEqual([])
      })
    })
  })
})
