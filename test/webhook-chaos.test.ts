import { afterAll, describe, expect, it } from "vitest"
import { terminator } from "./support/faults.js"
import { endpoint, Receiver, webhookOrganization } from "./support/receiver.js"
import { postJson, startSeededServer, useServer } from "./support/server.js"
import { eventually } from "./support/wait.js"

const receiver = await Receiver.start()
afterAll(() => receiver.close())

const server = useServer(() =>
  startSeededServer(
    { organizations: [webhookOrganization("org_chaos", [endpoint("wh_chaos", receiver.url("/chaos"))])] },
    { WEBHOOK_ALLOW_PRIVATE_URLS: "true", WEBHOOK_RETRY_BASE_MS: "100", WEBHOOK_TIMEOUT_MS: "2000", LOG_LEVEL: "none" }
  )
)

describe("webhooks while PostgreSQL connections are killed", () => {
  it("gives every post acknowledged with 200 exactly one message, and loses none", async () => {
    const chaos = terminator(server.db.name, 200)
    const acknowledged: Array<string> = []
    const statuses: Record<number, number> = {}
    // Rounds until 50 posts are acknowledged and more than 10 connections have been killed (at most 400 rounds):
    // how many get through between kills depends on the machine's speed and load, not on the service, so the test
    // waits for enough of both instead of counting them (on a fast run, 50 posts took less than 11 kills' time).
    for (let round = 0; round < 400 && (acknowledged.length < 50 || chaos.kills <= 10); round++) {
      const results = await Promise.all(Array.from({ length: 6 }, (_, i) =>
        postJson(`${server.api}/feedback`, { organizationId: "org_chaos", boardId: "b_org_chaos", title: `Chaos ${round}.${i}`, content: "" })
      ))
      for (const res of results) {
        statuses[res.status] = (statuses[res.status] ?? 0) + 1
        if (res.status === 200) acknowledged.push(res.body.id)
        // Anything else is a clean failure, never a leak.
        else expect(res.body).toEqual({ _tag: "InternalServerError", message: "Internal server error" })
      }
    }
    const kills = await chaos.stop()
    expect(kills).toBeGreaterThan(10)
    // Posts keep getting through between kills.
    expect(acknowledged.length).toBeGreaterThanOrEqual(50)

    // Everything settles: no delivery is left pending once the connections stay up.
    await eventually("every delivery to succeed", async () => {
      const [row] = await server.db.query((sql) =>
        sql`SELECT count(*)::int AS pending FROM webhook_deliveries WHERE status <> 'succeeded'`
      )
      return row!["pending"] === 0 || undefined
    }, { timeoutMs: 30_000, everyMs: 100 })
    await new Promise((r) => setTimeout(r, 500))

    const received = receiver.at("/chaos").map((r) => ({ id: String(r.headers["webhook-id"]), post: JSON.parse(r.body).data.id as string }))
    const stored = (await server.db.query((sql) => sql`SELECT id FROM posts WHERE organization_id = 'org_chaos'`)).map((r) => r["id"] as string)
    const events = await server.db.query((sql) =>
      sql`SELECT body::jsonb -> 'data' ->> 'id' AS post FROM webhook_events WHERE organization_id = 'org_chaos'`
    )

    // No message twice, and one message for every stored post: the outbox commits with the post.
    expect(new Set(received.map((r) => r.id)).size).toBe(received.length)
    expect(received.map((r) => r.post).sort()).toEqual([...stored].sort())
    expect(events.map((e) => e["post"]).sort()).toEqual([...stored].sort())
    // Every acknowledged post is stored, and got its one message.
    for (const id of acknowledged) expect(received.filter((r) => r.post === id)).toHaveLength(1)
    console.log(`chaos: ${kills} connections killed; answers ${JSON.stringify(statuses)}; ${received.length} messages for ${stored.length} posts`)
  }, 90_000)
})
