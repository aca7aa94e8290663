import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { Reactivity } from "effect/reactivity"
import { type Agent, request as httpRequest } from "node:http"
import { adminUrl, withClient } from "./database.js"
import type { TestServer } from "./server.js"

/**
 * Kills every connection to `database` but its own, every `everyMs`, until
 * `stop` (which yields how many it killed).
 */
export const terminator = (database: string, everyMs: number) => {
  let stopped = false
  let kills = 0
  const loop = Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    while (!stopped) {
      const rows = yield* sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = ${database} AND pid <> pg_backend_pid()`
      kills += rows.length
      yield* Effect.sleep(everyMs)
    }
  }).pipe(
    Effect.scoped,
    Effect.provide(PgClient.layer({ url: Redacted.make(adminUrl), maxConnections: 1 })),
    Effect.provide(Reactivity.layer)
  )
  const done = Effect.runPromise(loop)
  return {
    get kills() {
      return kills
    },
    stop: async () => (stopped = true, await done, kills)
  }
}

/**
 * Runs `statement` (e.g. `LOCK TABLE posts IN SHARE ROW EXCLUSIVE MODE`) in a
 * transaction on `url` and keeps that transaction open until `release`:
 * whatever waits on the lock stays in flight meanwhile.
 */
export const holdLock = (url: string, statement: string) => {
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  let locked!: () => void
  const held = new Promise<void>((resolve) => (locked = resolve))
  const done = withClient(url, (sql) =>
    sql.withTransaction(Effect.gen(function*() {
      yield* sql.unsafe(statement)
      locked()
      yield* Effect.promise(() => released)
    })))
  return {
    /** Resolves once the lock is taken. */
    held: Promise.race([held, done.then(() => Promise.reject(new Error("the lock's transaction ended early")))]),
    release: async () => (release(), await done)
  }
}

/** What one request came to: an answer, or how it failed (`timeout` is a hang). */
export interface Outcome {
  /** 0 when there was no answer. */
  readonly status: number
  readonly contentType: string | undefined
  readonly retryAfter: string | undefined
  /** The `Connection` header of the answer (`close` when the server ends the connection after it). */
  readonly connection: string | undefined
  /** Parsed JSON when the body is JSON, else the text. */
  readonly body: any
  /** `timeout`, or the network error's code (`ECONNREFUSED`, `ECONNRESET`, `UND_ERR_SOCKET`, …). */
  readonly error: string | undefined
  /** Sent on a kept-alive connection that an earlier request had used. */
  readonly reused: boolean
  /** `performance.now()` when it was sent and when it ended. */
  readonly startedAt: number
  readonly endedAt: number
}

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

const errorCode = (error: unknown): string => {
  const e = error as { name?: string; code?: string; cause?: { code?: string; name?: string; message?: string } }
  if (e.name === "TimeoutError" || e.name === "AbortError" || e.cause?.name === "TimeoutError") return "timeout"
  return e.code ?? e.cause?.code ?? e.cause?.message ?? String(error)
}

export interface AttemptOptions {
  readonly method?: string
  /** JSON-encoded and sent with `content-type: application/json`. */
  readonly body?: unknown
  readonly headers?: Record<string, string>
  /** Past this the request counts as hung (`error: "timeout"`) and is aborted. */
  readonly timeoutMs: number
}

/** One request with `fetch` (keep-alive connections) that never waits past `timeoutMs`. */
export const attempt = async (url: string, options: AttemptOptions): Promise<Outcome> => {
  const startedAt = performance.now()
  const signal = AbortSignal.timeout(options.timeoutMs)
  try {
    const res = await fetch(url, {
      method: options.method ?? (options.body === undefined ? "GET" : "POST"),
      headers: { ...(options.body === undefined ? {} : { "content-type": "application/json" }), ...options.headers },
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
      signal
    })
    const text = await res.text()
    return {
      status: res.status,
      contentType: res.headers.get("content-type") ?? undefined,
      retryAfter: res.headers.get("retry-after") ?? undefined,
      connection: res.headers.get("connection") ?? undefined,
      body: parse(text),
      error: undefined,
      reused: false,
      startedAt,
      endedAt: performance.now()
    }
  } catch (error) {
    return failed(errorCode(error), startedAt)
  }
}

const failed = (error: string, startedAt: number, reused = false): Outcome => ({
  status: 0,
  contentType: undefined,
  retryAfter: undefined,
  connection: undefined,
  body: undefined,
  error,
  reused,
  startedAt,
  endedAt: performance.now()
})

/**
 * One request on a connection of its own (`Connection: close`), as a new
 * client would make it, or on `agent`'s kept-alive connections, that never
 * waits past `timeoutMs`. With `restOfBody`,
 * the body's first half goes at once and the rest once that promise
 * resolves: a slow client, whose request stays in flight meanwhile. `sent` is
 * called once the first bytes are written.
 */
export const attemptFresh = (
  url: string,
  options: AttemptOptions & { readonly agent?: Agent; readonly restOfBody?: Promise<void>; readonly sent?: () => void }
): Promise<Outcome> =>
  new Promise((resolve) => {
    const startedAt = performance.now()
    const body = options.body === undefined ? undefined : Buffer.from(JSON.stringify(options.body))
    let settled = false
    const settle = (outcome: Outcome) => {
      if (!settled) (settled = true, resolve(outcome))
    }
    const req = httpRequest(url, {
      method: options.method ?? (body === undefined ? "GET" : "POST"),
      agent: options.agent ?? false,
      signal: AbortSignal.timeout(options.timeoutMs),
      headers: {
        ...(body === undefined ? {} : { "content-type": "application/json", "content-length": String(body.length) }),
        ...options.headers
      }
    }, (res) => {
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (chunk) => (text += chunk))
      res.on("error", (error) => settle(failed(errorCode(error), startedAt, req.reusedSocket)))
      res.on("end", () =>
        settle({
          status: res.statusCode ?? 0,
          contentType: res.headers["content-type"],
          retryAfter: res.headers["retry-after"] as string | undefined,
          connection: res.headers["connection"],
          body: parse(text),
          error: undefined,
          reused: req.reusedSocket,
          startedAt,
          endedAt: performance.now()
        }))
    })
    req.on("error", (error) => settle(failed(errorCode(error), startedAt, req.reusedSocket)))
    if (body === undefined) {
      req.end()
      req.once("socket", (socket) => socket.once("connect", () => options.sent?.()))
    } else if (options.restOfBody === undefined) {
      req.end(body)
      req.once("socket", (socket) => socket.once("connect", () => options.sent?.()))
    } else {
      const half = Math.floor(body.length / 2)
      req.flushHeaders()
      req.write(body.subarray(0, half), () => options.sent?.())
      void options.restOfBody.then(() => {
        if (!req.destroyed) req.end(body.subarray(half))
      })
    }
  })

/** Runs `count` jobs, `concurrency` at a time, and yields their results in job order. */
export const pool = async <A>(count: number, concurrency: number, job: (i: number) => Promise<A>): Promise<Array<A>> => {
  const results = new Array<A>(count)
  let next = 0
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) {
      const i = next++
      results[i] = await job(i)
    }
  }))
  return results
}

/** Keeps `concurrency` requests made by `job` in flight until `stop`, which yields every outcome. */
export const steadyLoad = (concurrency: number, job: (i: number) => Promise<Outcome>) => {
  let stopped = false
  const outcomes: Array<Outcome> = []
  let n = 0
  const workers = Promise.all(Array.from({ length: concurrency }, async () => {
    while (!stopped) outcomes.push(await job(n++))
  }))
  return {
    outcomes,
    stop: async () => (stopped = true, await workers, outcomes)
  }
}

/** `{ "200": 12, "503": 3, "ECONNREFUSED": 1 }` */
export const tally = (outcomes: ReadonlyArray<Outcome>) =>
  outcomes.reduce<Record<string, number>>((out, o) => {
    const key = o.error ?? String(o.status)
    return { ...out, [key]: (out[key] ?? 0) + 1 }
  }, {})

/** Runs `body` while a direct session holds `table` exclusively: every statement reading it waits. */
export const holding = <A>(server: TestServer, table: string, body: () => Promise<A>) =>
  withClient(server.db.url, (sql) =>
    sql.withTransaction(Effect.andThen(sql.unsafe(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`), Effect.promise(body))))

/** The test database's statements waiting for a lock, as PostgreSQL itself sees them. */
export const waitingForLocks = (server: TestServer) =>
  server.db.query<{ n: number }>((sql) =>
    sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`
  ).then((rows) => rows[0]!.n)
