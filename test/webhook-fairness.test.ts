import { afterAll, describe, expect, it } from "vitest"
import { endpoint, Receiver, webhookOrganization } from "./support/receiver.js"
import { widgetClient } from "./support/client.js"
import { startSeededServer, useServer } from "./support/server.js"

const receiver = await Receiver.start()
afterAll(() => receiver.close())

// A's endpoint takes the request and never answers; B's fails once, then takes it.
let hanging = true
receiver
  .on("/hang", () => hanging ? { status: 204, delayMs: 10 * 60_000 } : { status: 410 })
  .on("/next", (n) => ({ status: n === 1 ? 503 : 204 }))

const server = useServer(() =>
  startSeededServer({
    organizations: [
      webhookOrganization("org_hang", [endpoint("wh_hang", receiver.url("/hang"))]),
      webhookOrganization("org_next", [endpoint("wh_next", receiver.url("/next"))])
    ]
  }, { WEBHOOK_ALLOW_PRIVATE_URLS: "true", WEBHOOK_TIMEOUT_MS: "60000", WEBHOOK_RETRY_BASE_MS: "100" })
)
// Runs before the server closes: the attempts in flight end at once instead of waiting out the timeout.
afterAll(() => {
  hanging = false
  receiver.dropConnections()
})

const post = (organizationId: string, title: string) =>
  widgetClient(server).feedback({ organizationId, boardId: `b_${organizationId}`, title, content: "" })

describe("an endpoint that never answers, with a backlog of 300", () => {
  it("holds only its own share of the worker: another organization's delivery, and its retry, go out within seconds", async () => {
    const backlog = 300
    for (let i = 0; i < backlog; i += 20) {
      const answers = await Promise.all(Array.from({ length: 20 }, (_, j) => post("org_hang", `Backlog ${i + j}`)))
      expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200))
    }
    // Its share of the worker is held open; the rest of the backlog waits behind it.
    await receiver.waitFor("/hang", 16)

    const res = await post("org_next", "Next")
    expect(res.status).toBe(200)
    const started = Date.now()
    // The retry is due after every one of A's new deliveries: it must not queue behind them. Before
    // claims were fair it went out only once A's whole backlog had been tried, 16 per timeout (a
    // minute here); now within a second or two. 10 s leaves room for a loaded machine.
    const [first, retry] = await receiver.waitFor("/next", 2, 10_000)
    expect(JSON.parse(first!.body).data.id).toBe(res.body.id)
    expect(retry!.headers["webhook-id"]).toBe(first!.headers["webhook-id"])
    expect(retry!.at - started).toBeLessThan(10_000)
    // A's first 16 attempts are still waiting for an answer, and it got no more.
    expect(receiver.at("/hang")).toHaveLength(16)
  })
})
