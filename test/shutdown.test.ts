import { Agent } from "node:http"
import { connect } from "node:net"
import { describe, expect, it } from "vitest"
import { attemptFresh, holdLock, type Outcome, tally } from "./support/faults.js"
import { createDatabase } from "./support/database.js"
import { endpoint, Receiver, webhookOrganization } from "./support/receiver.js"
import { freePort, type ServerProcess, spawnScript, spawnServer, waitForHealth, workerScript } from "./support/process.js"
import { postJson, useServerProcesses, writeFixtureFile } from "./support/server.js"
import { eventually } from "./support/wait.js"

/**
 * SIGTERM (or SIGINT) while keep-alive clients post (docs/decisions/0018-draining.md):
 * the server drains. The process is the built server, as `npm start` runs
 * it, on an ephemeral port. No assertion is about how fast anything happens:
 * the order of events is what is checked.
 */

// Every post enqueues one webhook event; with WEBHOOK_WORKER=false nothing sends them, so they stay to be counted.
const fixture = { organizations: [webhookOrganization("org_drain", [endpoint("wh_drain", "http://127.0.0.1:9/hook")])] }
const feedback = (title: string) => ({ organizationId: "org_drain", boardId: "b_org_drain", title, content: "<p>Drain</p>" })
const refusal = {
  status: 503,
  retryAfter: "1",
  connection: "close",
  contentType: "application/json",
  body: { _tag: "InternalServerError", message: "shutting down; retry shortly" }
}
const clientCount = 30

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

describe("stopping with 30 keep-alive clients posting", () => {
  const servers = useServerProcesses(fixture, { WEBHOOK_WORKER: "false" })

  const title = "%s: answers the posts in flight, starts nothing new, closes every connection and exits 0"
  it.each(["SIGTERM", "SIGINT"] as const)(title, async (signal) => {
    const server = await servers.processes.start()
    const url = `${server.origin}/api/widget/v1/feedback`
    const outcomes: Array<Outcome & { readonly title: string }> = []
    const acknowledgedBy = new Array<number>(clientCount).fill(0)
    let stopped = false
    void server.exited.then(() => (stopped = true))

    // Each client posts on its own kept-alive connection, one post after another, until the
    // server is gone: then a new connection is refused, and that is its last request.
    const clients = Array.from({ length: clientCount }, async (_, c) => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 })
      for (let n = 0;; n++) {
        const title = `${signal} ${c}.${n}`
        const outcome = await attemptFresh(url, { agent, body: feedback(title), timeoutMs: 30_000 })
        outcomes.push({ ...outcome, title })
        if (outcome.status === 200) acknowledgedBy[c]!++
        if (stopped && outcome.error === "ECONNREFUSED") break
        if (outcome.status !== 200) await sleep(20)
      }
      agent.destroy()
    })
    await eventually("every client to have posted on its kept-alive connection", async () =>
      acknowledgedBy.every((n) => n >= 2) || undefined, { timeoutMs: 30_000, everyMs: 20 })

    server.child.kill(signal)
    // The moment the listener is seen closed: the server began draining before it (http/Drain.ts),
    // so a request sent after it reaches a draining server.
    const listenerClosed = await eventually("the listener to close", async () => {
      const probe = await attemptFresh(`${server.origin}/health`, { timeoutMs: 10_000 })
      return probe.error === "ECONNREFUSED" ? probe.endedAt : undefined
    }, { timeoutMs: 30_000, everyMs: 10 })
    const exitCode = await Promise.race([server.exited, sleep(30_000).then(() => `still running 30 s after ${signal}`)])
    stopped = true
    await Promise.all(clients)

    const posts = await servers.db.query<{ title: string; events: number }>((sql) =>
      sql`SELECT p.title, (SELECT count(*) FROM webhook_events e WHERE e.body::jsonb -> 'data' ->> 'id' = p.id)::int AS events
          FROM posts p WHERE p.title LIKE ${`${signal} %`}`)
    const later = outcomes.filter((o) => o.startedAt > listenerClosed)
    const closing = outcomes.filter((o) => o.status === 200 && o.connection === "close")
    console.info(
      `${signal}: ${clientCount} keep-alive clients, ${JSON.stringify(tally(outcomes))}; ` +
        `${closing.length} in flight answered 200 with Connection: close; ` +
        `after the listener closed ${JSON.stringify(tally(later))}; exit ${exitCode}`
    )

    expect(exitCode).toBe(0)
    // Every post committed was acknowledged to its client, and every acknowledged post is stored
    // once with its one webhook event: no work hides behind a reset or a 503.
    expect(posts.map((p) => p.title).sort()).toEqual(outcomes.filter((o) => o.status === 200).map((o) => o.title).sort())
    expect(posts.filter((p) => p.events !== 1)).toEqual([])
    // The posts in flight when draining began finished, and their answers closed the connection.
    expect(closing.length).toBeGreaterThan(0)
    // Any other answer is the refusal: a JSON 503 with Retry-After that closes the connection.
    for (const o of outcomes.filter((o) => o.error === undefined && o.status !== 200)) {
      expect({ status: o.status, retryAfter: o.retryAfter, connection: o.connection, contentType: o.contentType, body: o.body })
        .toEqual(refusal)
    }
    // Nothing sent once the listener was closed started work, though the clients' connections
    // were kept alive: every answer to it is the refusal.
    expect(later.filter((o) => o.status === 200).map((o) => o.title)).toEqual([])
    // No hang. A connection is reset only where no request of it was taken (its post is not stored,
    // checked above): one the server closed while idle, or one the kernel had queued when the
    // listener closed, both before the listener was seen closed (decision 0018).
    for (const o of outcomes.filter((o) => o.error !== undefined)) {
      expect(o.error === "ECONNREFUSED" || (o.error === "ECONNRESET" && o.startedAt < listenerClosed), `${o.title}: ${o.error}`)
        .toBe(true)
    }
  }, 120_000)
})

/** Resolves once `server`'s listener refuses a new connection: it has begun to drain before that. */
const listenerClosed = (origin: string) =>
  eventually("the listener to close", async () =>
    (await attemptFresh(`${origin}/health`, { timeoutMs: 10_000 })).error === "ECONNREFUSED" || undefined,
  { timeoutMs: 30_000, everyMs: 10 })

/** An open TCP connection to `origin` on which nothing is sent yet; `send` writes `bytes` and yields all the server sent back. */
const rawConnection = (origin: string) =>
  new Promise<{ readonly send: (bytes: string) => Promise<string> }>((resolve, reject) => {
    const { hostname, port } = new URL(origin)
    const socket = connect({ host: hostname, port: Number(port) })
    let received = ""
    const ended = new Promise<string>((done) => socket.once("close", () => done(received)))
    socket.setEncoding("latin1")
    socket.on("data", (chunk: string) => (received += chunk))
    socket.on("error", () => undefined)
    socket.once("connect", () => resolve({ send: (bytes) => (socket.write(bytes), ended) }))
    socket.once("error", reject)
  })

/** The status, `Connection`, `Retry-After` and JSON body of one HTTP/1.1 answer as it came off the socket. */
const parseRaw = (raw: string) => {
  const end = raw.indexOf("\r\n\r\n")
  const [statusLine = "", ...lines] = raw.slice(0, Math.max(0, end)).split("\r\n")
  const header = (name: string) =>
    lines.find((line) => line.toLowerCase().startsWith(`${name}:`))?.slice(name.length + 1).trim()
  let body: unknown
  try {
    body = JSON.parse(raw.slice(end + 4))
  } catch {
    body = raw.slice(end + 4)
  }
  return {
    status: Number(statusLine.split(" ")[1] ?? 0),
    retryAfter: header("retry-after"),
    connection: header("connection"),
    contentType: header("content-type"),
    body
  }
}

const outcomeOf = (o: Outcome) =>
  ({ status: o.status, retryAfter: o.retryAfter, connection: o.connection, contentType: o.contentType, body: o.body })

describe("stopping: idle connections and requests past the grace period (docs/decisions/0029-request-bodies-and-sockets.md)", () => {
  // The post below waits on a lock past the grace period: the statement limit must not be what ends it.
  const servers = useServerProcesses(fixture, { WEBHOOK_WORKER: "false", DATABASE_STATEMENT_TIMEOUT_MS: "30000" })

  it("a request a client starts on an idle connection after SIGTERM is refused with the JSON 503, never reset", async () => {
    const server = await servers.processes.start()
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    expect((await attemptFresh(`${server.origin}/health`, { agent, timeoutMs: 10_000 })).status).toBe(200)
    const unused = await rawConnection(server.origin)

    const signalled = performance.now()
    server.child.kill("SIGTERM")
    await listenerClosed(server.origin)
    // Both connections are idle now, and were when the server began to drain: closing them would race these requests.
    const kept = await attemptFresh(`${server.origin}/api/widget/v1/feedback`, {
      agent,
      body: feedback("Sent on an idle connection while stopping"),
      timeoutMs: 10_000
    })
    const fromUnused = parseRaw(await unused.send("GET /health HTTP/1.1\r\nHost: hearken\r\n\r\n"))
    const exitCode = await Promise.race([server.exited, sleep(30_000).then(() => "still running 30 s after SIGTERM")])
    console.info(`idle connections: refused ${Math.round(kept.startedAt - signalled)} ms after SIGTERM; exit ${exitCode} after ${Math.round(performance.now() - signalled)} ms`)
    agent.destroy()

    expect({ reused: kept.reused, error: kept.error, ...outcomeOf(kept) }).toEqual({ reused: true, error: undefined, ...refusal })
    expect(fromUnused).toEqual(refusal)
    expect(exitCode).toBe(0)
    const posts = await servers.db.query((sql) => sql`SELECT id FROM posts WHERE title = 'Sent on an idle connection while stopping'`)
    expect(posts).toEqual([])
  }, 60_000)

  it("a request still running when the 10 s grace period ends gets the JSON 503, and stores nothing", async () => {
    const server = await servers.processes.start()
    const api = `${server.origin}/api/widget/v1`
    // One post waits on a lock on `posts`; another's client sends half its body and never the rest.
    const lock = holdLock(servers.db.url, "LOCK TABLE posts IN SHARE ROW EXCLUSIVE MODE")
    await lock.held
    const waiting = attemptFresh(`${api}/feedback`, { body: feedback("Waiting past the grace period"), timeoutMs: 40_000 })
    let sent!: () => void
    const halfSent = new Promise<void>((resolve) => (sent = resolve))
    const unfinished = attemptFresh(`${api}/feedback`, {
      body: feedback("Half sent past the grace period"),
      timeoutMs: 40_000,
      restOfBody: new Promise<void>(() => undefined),
      sent
    })
    await halfSent
    await eventually("the post to wait on the lock", async () => {
      const [row] = await servers.db.query<{ n: number }>((sql) =>
        sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = ${servers.db.name} AND wait_event_type = 'Lock'`)
      return row!.n === 1 || undefined
    }, { timeoutMs: 15_000, everyMs: 20 })

    const signalled = performance.now()
    server.child.kill("SIGTERM")
    const answers = await Promise.all([waiting, unfinished])
    const exitCode = await Promise.race([server.exited, sleep(30_000).then(() => "still running 30 s after SIGTERM")])
    await lock.release()
    console.info(`past the grace period: ${answers.map((o) => `${o.error ?? o.status} ${Math.round(o.endedAt - signalled)} ms`).join(" and ")} after SIGTERM`)

    for (const o of answers) expect({ error: o.error, ...outcomeOf(o) }).toEqual({ error: undefined, ...refusal })
    // Answered once the grace period was over, not before.
    for (const o of answers) expect(o.endedAt - signalled).toBeGreaterThan(9_000)
    expect(exitCode).toBe(0)
    const posts = await servers.db.query((sql) => sql`SELECT id FROM posts WHERE title LIKE '%past the grace period'`)
    expect(posts).toEqual([])
  }, 90_000)
})

describe("the log of a stop", () => {
  const stripped = (line: string) => line.replace(/^\[[\d:.]+\] INFO \(#\d+\): /, "")
  const stopped = "Stopped: every task ended and every connection closed"

  /** `process`'s stdout lines as they come, each with when it came. */
  const timed = (process: ServerProcess) => {
    const lines: Array<{ readonly line: string; readonly at: number }> = []
    let partial = ""
    process.child.stdout!.on("data", (chunk: Buffer) => {
      const parts = (partial + chunk.toString("utf8")).split("\n")
      partial = parts.pop()!
      for (const line of parts) lines.push({ line: stripped(line), at: Date.now() })
    })
    return lines
  }

  it("says when draining begins, when the server has stopped listening, and, last, when it has released everything (issue 29)", async () => {
    // A webhook attempt is still in flight when the listener has stopped: the last line waits for it.
    const receiver = await Receiver.start()
    const answerMs = 3_000
    let answeredAt = Number.POSITIVE_INFINITY
    receiver.on("/slow", () => {
      answeredAt = Date.now() + answerMs
      return { status: 200, delayMs: answerMs }
    })
    const fixture = { organizations: [webhookOrganization("org_stop", [endpoint("wh_stop", receiver.url("/slow"))])] }
    const server = spawnServer({
      PGLITE_DIR: "memory", LOG_LEVEL: "info", WEBHOOK_ALLOW_PRIVATE_URLS: "true", SEED_FILE: await writeFixtureFile(fixture)
    }, await freePort())
    const lines = timed(server)
    try {
      await waitForHealth(server.origin, 60_000)
      const res = await postJson(`${server.origin}/api/widget/v1/feedback`, {
        organizationId: "org_stop", boardId: "b_org_stop", title: "Stop", content: ""
      })
      expect(res.status).toBe(200)
      await receiver.waitFor("/slow", 1)
      server.child.kill("SIGTERM")
      expect(await server.closed).toBe(0)
      const stop = lines.filter(({ line }) => /^(Draining|Stopped)/.test(line))
      expect(stop.map(({ line }) => line)).toEqual([
        "Draining: new requests get 503; 0 in flight finish within 10s",
        "Stopped listening: every connection ended",
        stopped
      ])
      // The last line of all, and only once the webhook attempt had its answer.
      expect(lines.at(-1)!.line).toBe(stopped)
      expect(stop[2]!.at).toBeGreaterThanOrEqual(answeredAt)
      expect(stop[1]!.at).toBeLessThan(answeredAt)
    } finally {
      server.child.kill("SIGKILL")
      await receiver.close()
    }
  }, 90_000)

  it("npm run worker says when it begins to drain and, once its attempt in flight has ended, that it has stopped", async () => {
    const [db, receiver] = await Promise.all([createDatabase(), Receiver.start()])
    const answerMs = 3_000
    let answeredAt = Number.POSITIVE_INFINITY
    receiver.on("/slow", () => {
      answeredAt = Date.now() + answerMs
      return { status: 200, delayMs: answerMs }
    })
    const fixture = { organizations: [webhookOrganization("org_worker", [endpoint("wh_worker", receiver.url("/slow"))])] }
    const env = { DATABASE_URL: db.url, WEBHOOK_ALLOW_PRIVATE_URLS: "true" }
    // The server takes the post and sends nothing; the worker sends it.
    const server = spawnServer({ ...env, WEBHOOK_WORKER: "false", LOG_LEVEL: "warn", SEED_FILE: await writeFixtureFile(fixture) }, await freePort())
    let worker: ServerProcess | undefined
    try {
      await waitForHealth(server.origin, 60_000)
      worker = spawnScript(workerScript, [], { ...env, LOG_LEVEL: "info" })
      const lines = timed(worker)
      const res = await postJson(`${server.origin}/api/widget/v1/feedback`, {
        organizationId: "org_worker", boardId: "b_org_worker", title: "Stop", content: ""
      })
      expect(res.status).toBe(200)
      await receiver.waitFor("/slow", 1, 60_000)
      worker.child.kill("SIGTERM")
      expect(await worker.closed).toBe(0)
      const stop = lines.filter(({ line }) => /^(Draining|Stopped)/.test(line))
      expect(stop.map(({ line }) => line)).toEqual([
        "Draining: no new webhook deliveries are claimed; attempts in flight: 1, given 17s 350ms to finish (then given back)",
        stopped
      ])
      expect(lines.at(-1)!.line).toBe(stopped)
      expect(stop[0]!.at).toBeLessThan(answeredAt)
      expect(stop[1]!.at).toBeGreaterThanOrEqual(answeredAt)
      // The attempt finished and was recorded before the worker stopped: it is not sent again.
      const [delivery] = await db.query((sql) => sql`SELECT status, attempts FROM webhook_deliveries WHERE endpoint_id = 'wh_worker'`)
      expect(delivery).toEqual({ status: "succeeded", attempts: 1 })
    } finally {
      worker?.child.kill("SIGKILL")
      server.child.kill("SIGKILL")
      await server.closed
      await receiver.close()
      await db.drop()
    }
  }, 120_000)
})
