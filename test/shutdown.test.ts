import { Agent } from "node:http"
import { describe, expect, it } from "vitest"
import { attemptFresh, type Outcome, tally } from "./support/faults.js"
import { endpoint, webhookOrganization } from "./support/receiver.js"
import { useServerProcesses } from "./support/server.js"
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
