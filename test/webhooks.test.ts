import { SignJWT } from "jose"
import { Webhook } from "standardwebhooks"
import { afterAll, describe, expect, it } from "vitest"
import type { FeedbackRequest } from "@hearken/api"
import { widgetClient } from "./support/client.js"
import { baseFixture } from "./support/fixtures.js"
import { endpoint, Receiver, testWebhookSecret, webhookOrganization } from "./support/receiver.js"
import { startSeededServer, useServer } from "./support/server.js"
import { eventually } from "./support/wait.js"

const receiver = await Receiver.start()
afterAll(() => receiver.close())

const fixture = baseFixture()
const acme = fixture.organizations[0]! as Record<string, unknown>
acme["webhooks"] = [
  endpoint("wh_main", receiver.url("/main")),
  // Subscribed to nothing: receives nothing.
  endpoint("wh_none", receiver.url("/none"), [])
]
const organizations = fixture.organizations as Array<Record<string, unknown>>
organizations.push(
  webhookOrganization("org_flaky", [endpoint("wh_flaky", receiver.url("/flaky"))]),
  webhookOrganization("org_redirect", [endpoint("wh_redirect", receiver.url("/redirect"))]),
  webhookOrganization("org_slow", [endpoint("wh_slow", receiver.url("/slow"))]),
  webhookOrganization("org_refuses", [endpoint("wh_refuses", receiver.url("/refuses"))]),
  webhookOrganization("org_down", [endpoint("wh_down", "http://127.0.0.1:9/down")])
)

receiver
  .on("/flaky", (n) => ({ status: n <= 2 ? 503 : 204 }))
  .on("/redirect", () => ({ status: 302, headers: { location: receiver.url("/main") } }))
  .on("/slow", () => ({ status: 200, delayMs: 5_000 }))
  .on("/refuses", () => ({ status: 422, body: "unprocessable: we do not take these" }))

const server = useServer(() =>
  startSeededServer(fixture, {
    WEBHOOK_ALLOW_PRIVATE_URLS: "true",
    WEBHOOK_RETRY_BASE_MS: "100",
    WEBHOOK_TIMEOUT_MS: "1000",
    WEBHOOK_MAX_ATTEMPTS: "4"
  })
)

const post = (organizationId: string, boardId: string, extra: Partial<FeedbackRequest> = {}) =>
  widgetClient(server).feedback({ organizationId, boardId, title: "Hook me", content: "<p>body</p>", ...extra })

const delivery = async (postId: string, endpointId: string) => {
  const rows = await server.db.query((sql) =>
    sql`SELECT d.status, d.attempts, d.last_status AS "lastStatus", d.last_error AS "lastError",
          d.last_response AS "lastResponse", d.event_id AS "messageId"
        FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
        WHERE d.endpoint_id = ${endpointId} AND e.body::jsonb -> 'data' ->> 'id' = ${postId}`
  )
  return rows as Array<Record<string, unknown>>
}

const settled = (postId: string, endpointId: string, timeoutMs = 10_000) =>
  eventually(`the delivery of ${postId} to ${endpointId} to settle`, async () => {
    const [row] = await delivery(postId, endpointId)
    return row !== undefined && row["status"] !== "pending" ? row : undefined
  }, { timeoutMs })

describe("feedback.post.created webhooks", () => {
  it("delivers a body matching the post, signed so that standardwebhooks verifies it", async () => {
    const res = await post("org_acme", "b_feat", { metadata: { plan: "pro" } })
    expect(res.status).toBe(200)
    const [received] = await receiver.waitFor("/main", 1)
    const headers = received!.headers
    expect(headers["content-type"]).toBe("application/json")
    expect(headers["user-agent"]).toMatch(/^Hearken-Webhooks\/\d/)
    expect(headers["webhook-id"]).toMatch(/^msg_[0-9a-f]{32}$/)
    expect(headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]+=*$/)
    expect(Math.abs(Number(headers["webhook-timestamp"]) - Date.now() / 1000)).toBeLessThan(10)

    const verified = new Webhook(testWebhookSecret).verify(received!.body, {
      "webhook-id": String(headers["webhook-id"]),
      "webhook-timestamp": String(headers["webhook-timestamp"]),
      "webhook-signature": String(headers["webhook-signature"])
    })
    expect(verified).toEqual({
      type: "feedback.post.created",
      timestamp: res.body.createdAt,
      data: {
        id: res.body.id,
        slug: res.body.slug,
        title: "Hook me",
        boardId: "b_feat",
        organizationId: "org_acme",
        createdAt: res.body.createdAt,
        statusId: "st_acme_open",
        contactId: null,
        metadata: { plan: "pro" }
      }
    })
    // A tampered body or another secret does not verify.
    const signed = { "webhook-id": String(headers["webhook-id"]), "webhook-timestamp": String(headers["webhook-timestamp"]), "webhook-signature": String(headers["webhook-signature"]) }
    expect(() => new Webhook(testWebhookSecret).verify(received!.body.replace("Hook me", "Hook us"), signed)).toThrow()
    expect(() => new Webhook("whsec_" + Buffer.from("another secret of 32 bytes......").toString("base64")).verify(received!.body, signed)).toThrow()
    expect(await settled(res.body.id, "wh_main")).toMatchObject({ status: "succeeded", attempts: 1, lastStatus: 200 })
  })

  it("carries the contact id of an identified post", async () => {
    const token = await new SignJWT({ email: "dana@example.com", id: "u-dana" })
      .setProtectedHeader({ alg: "HS256" }).setAudience("org_acme").setIssuedAt()
      .sign(new TextEncoder().encode("acme-current-secret-0123456789abcdef0123"))
    const res = await post("org_acme", "b_feat", { token, title: "Identified" })
    expect(res.status).toBe(200)
    await settled(res.body.id, "wh_main")
    const event = receiver.at("/main").map((r) => JSON.parse(r.body)).find((e) => e.data.id === res.body.id)
    const [contact] = await server.db.query((sql) => sql`SELECT id FROM contacts WHERE external_id = 'u-dana'`)
    expect(event.data.contactId).toBe(contact!["id"])
    expect(event.data.contactId).toEqual(expect.any(String))
  })

  it("retries a receiver that fails twice, then succeeds: 3 attempts under one webhook-id", async () => {
    const res = await post("org_flaky", "b_org_flaky")
    const received = await receiver.waitFor("/flaky", 3)
    expect(received.map((r) => r.headers["webhook-id"])).toEqual(Array(3).fill(received[0]!.headers["webhook-id"]))
    expect(new Set(received.map((r) => r.body)).size).toBe(1)
    expect(await settled(res.body.id, "wh_flaky")).toMatchObject({ status: "succeeded", attempts: 3, lastStatus: 204 })
    await new Promise((r) => setTimeout(r, 300))
    expect(receiver.at("/flaky")).toHaveLength(3)
  })

  it("sends nothing to an organization without endpoints, or to an endpoint subscribed to no events", async () => {
    const other = await post("org_other", "b_other")
    expect(other.status).toBe(200)
    const acmePost = await post("org_acme", "b_bugs", { title: "Only main" })
    await settled(acmePost.body.id, "wh_main")
    expect(receiver.at("/none")).toEqual([])
    expect(await server.db.query((sql) => sql`SELECT id FROM webhook_deliveries WHERE endpoint_id = 'wh_none'`)).toEqual([])
    expect(await server.db.query((sql) => sql`SELECT id FROM webhook_events WHERE organization_id = 'org_other'`)).toEqual([])
  })

  it("does not follow a redirect: the delivery fails at once", async () => {
    const before = receiver.at("/main").length
    const res = await post("org_redirect", "b_org_redirect")
    expect(await settled(res.body.id, "wh_redirect")).toMatchObject({
      status: "failed",
      attempts: 1,
      lastStatus: 302,
      lastError: "HTTP 302: redirects are not followed"
    })
    expect(receiver.at("/redirect")).toHaveLength(1)
    expect(receiver.at("/main")).toHaveLength(before)
  })

  it("fails a 4xx answer at once and keeps an excerpt of it for the operator", async () => {
    const res = await post("org_refuses", "b_org_refuses")
    expect(await settled(res.body.id, "wh_refuses")).toMatchObject({
      status: "failed",
      attempts: 1,
      lastStatus: 422,
      lastError: "HTTP 422",
      lastResponse: "unprocessable: we do not take these"
    })
  })

  it("enforces WEBHOOK_TIMEOUT_MS, retries, and fails after WEBHOOK_MAX_ATTEMPTS", async () => {
    const res = await post("org_slow", "b_org_slow")
    const started = Date.now()
    const row = await settled(res.body.id, "wh_slow", 20_000)
    expect(row).toMatchObject({ status: "failed", attempts: 4, lastStatus: null, lastError: "no answer within 1000 ms (after 4 attempts)" })
    // Four attempts of one second each, and short backoffs: nowhere near the receiver's 5 s.
    expect(Date.now() - started).toBeLessThan(8_000)
    expect(receiver.at("/slow")).toHaveLength(4)
    // Timing out stalls the endpoint (decision 0026); failing at once, as /flaky did, does not.
    const lanes = await server.db.query((sql) =>
      sql`SELECT id, stalled FROM webhook_endpoints WHERE id IN ('wh_slow', 'wh_flaky') ORDER BY id`
    )
    expect(lanes).toEqual([{ id: "wh_flaky", stalled: false }, { id: "wh_slow", stalled: true }])
  })

  it("answers POST /feedback with 200 when the receiver is down, and retries it", async () => {
    const res = await post("org_down", "b_org_down")
    expect(res.status).toBe(200)
    const row = await settled(res.body.id, "wh_down")
    expect(row).toMatchObject({ status: "failed", attempts: 4 })
    expect(row["lastError"]).toMatch(/^network error: ECONNREFUSED/)
  })
})

describe("a receiver that sleeps 30 s", () => {
  const sleepyFixture = {
    organizations: [
      webhookOrganization("org_sleepy", [endpoint("wh_sleepy", receiver.url("/sleepy"))]),
      webhookOrganization("org_quiet", []),
      webhookOrganization("org_prompt", [endpoint("wh_prompt", receiver.url("/prompt"))])
    ]
  }
  receiver.on("/sleepy", () => ({ status: 200, delayMs: 30_000 }))
  const slow = useServer(() => startSeededServer(sleepyFixture, { WEBHOOK_ALLOW_PRIVATE_URLS: "true", WEBHOOK_TIMEOUT_MS: "60000" }))
  // Runs before the server closes, whose worker would otherwise wait out the sleeping answers.
  afterAll(() => receiver.dropConnections())

  const timedPosts = async (organizationId: string, n: number) => {
    const ms: Array<number> = []
    for (let i = 0; i < n; i++) {
      const started = performance.now()
      const res = await widgetClient(slow).feedback({ organizationId, boardId: `b_${organizationId}`, title: `Post ${i}`, content: "" })
      ms.push(performance.now() - started)
      expect(res.status).toBe(200)
    }
    return ms.sort((a, b) => a - b)
  }

  it("does not change POST /feedback latency", async () => {
    const baseline = await timedPosts("org_quiet", 15)
    await timedPosts("org_sleepy", 10)
    // Ten deliveries are now held open by the receiver while more posts arrive.
    await receiver.waitFor("/sleepy", 10)
    const during = await timedPosts("org_sleepy", 15)
    const median = (ms: Array<number>) => ms[Math.floor(ms.length / 2)]!
    expect(median(during)).toBeLessThan(median(baseline) + 100)
    expect(during.at(-1)!).toBeLessThan(2_000)
  })

  it("keeps at most 16 attempts in flight to it, so other endpoints are still served at once", async () => {
    // 25 deliveries to the sleeper are due; at most 16 are held open, the rest wait. Once one of
    // them has gone a second without an answer, the sleeper gets no more until they end (decision
    // 0026), so how many of the last 15 went out first depends on the machine's speed.
    await new Promise((r) => setTimeout(r, 700))
    const held = receiver.at("/sleepy").length
    expect(held).toBeGreaterThanOrEqual(10)
    expect(held).toBeLessThanOrEqual(16)
    const res = await widgetClient(slow).feedback({ organizationId: "org_prompt", boardId: "b_org_prompt", title: "Next", content: "" })
    const started = Date.now()
    const [received] = await receiver.waitFor("/prompt", 1, 2_000)
    expect(JSON.parse(received!.body).data.id).toBe(res.body.id)
    expect(received!.at - started).toBeLessThan(1_000)
    expect(receiver.at("/sleepy")).toHaveLength(held)
  })
})
