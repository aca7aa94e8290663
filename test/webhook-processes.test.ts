import { mkdtemp, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createDatabase, type TestDatabase } from "./support/database.js"
import { processGroup, type ServerProcess, spawnScript, webhooksCliScript, workerScript } from "./support/process.js"
import { endpoint, Receiver, webhookOrganization } from "./support/receiver.js"
import { eventually } from "./support/wait.js"
import { widgetClient } from "./support/client.js"

/**
 * The commands docs/webhooks.md ("Operating deliveries") gives: `npm run worker`, and
 * `npm run webhooks -- failed`, `npm run webhooks -- redeliver whd_…` and
 * `npm run webhooks -- resume wh_main` (the CLI `npm run webhooks` runs, here on the endpoint
 * wh_cli).
 *
 * Webhook delivery across real processes: the server as a process manager
 * runs it, dedicated workers (`npm run worker`), and the operator's CLI
 * (`npm run webhooks`), all on one PostgreSQL database.
 */
const receiver = await Receiver.start()
let db: TestDatabase
let env: Record<string, string>
const processes = processGroup(() => env)
const { start, stop } = processes

const fixture = {
  organizations: [
    webhookOrganization("org_restart", [endpoint("wh_restart", receiver.url("/restart"))]),
    webhookOrganization("org_many", [endpoint("wh_many", receiver.url("/many"))]),
    webhookOrganization("org_cli", [endpoint("wh_cli", receiver.url("/cli"))]),
    webhookOrganization("org_drain", [endpoint("wh_drain", receiver.url("/drain"))])
  ]
}

beforeAll(async () => {
  db = await createDatabase()
  const dir = await mkdtemp(join(tmpdir(), "hearken-webhooks-"))
  await writeFile(join(dir, "fixture.json"), JSON.stringify(fixture))
  env = {
    DATABASE_URL: db.url,
    SEED_FILE: join(dir, "fixture.json"),
    LOG_LEVEL: "error",
    RATE_LIMIT_MULTIPLIER: "1000",
    WEBHOOK_ALLOW_PRIVATE_URLS: "true",
    WEBHOOK_RETRY_BASE_MS: "400"
  }
})

afterAll(async () => {
  processes.killAll()
  await receiver.close()
  await db.drop()
})

const worker = () => processes.track(spawnScript(workerScript, [], { ...env, SEED_FILE: "" }))

const cli = async (...args: Array<string>) => {
  const process = spawnScript(webhooksCliScript, args, { DATABASE_URL: db.url, LOG_LEVEL: "error" })
  const code = await process.exited
  return { code, output: process.output() }
}

const post = (server: ServerProcess, organizationId: string, title = "Hello") =>
  widgetClient(server).feedback({ organizationId, boardId: `b_${organizationId}`, title, content: "" })

const deliveryOf = async (endpointId: string) => {
  const rows = await db.query((sql) =>
    sql`SELECT id, status, attempts, event_id AS "messageId" FROM webhook_deliveries
        WHERE endpoint_id = ${endpointId} ORDER BY created_at DESC LIMIT 1`
  )
  return rows[0] as { id: string; status: string; attempts: number; messageId: string }
}

/** Resolves once the newest delivery to `endpointId` has `status`. */
const deliveryReaches = (endpointId: string, status: string) =>
  eventually(`a ${status} delivery to ${endpointId}`, async () => {
    const delivery = await deliveryOf(endpointId)
    return delivery?.status === status ? delivery : undefined
  })

// Each test spawns several Node processes (servers, workers, up to seven runs of the CLI), each loading Effect:
// about 17 s alone, and past the default 30 s when Chromium tests share the machine's 2 cores.
describe("webhook delivery across processes", { timeout: 90_000 }, () => {
  it("delivers after a server restart in the middle of the retries, under the same webhook-id", async () => {
    let healthy = false
    receiver.on("/restart", () => ({ status: healthy ? 200 : 503 }))
    const first = await start()
    const res = await post(first, "org_restart")
    expect(res.status).toBe(200)
    await receiver.waitFor("/restart", 2)
    expect(await stop(first)).toBe(0)
    const beforeRestart = receiver.at("/restart").length
    expect((await deliveryOf("wh_restart")).status).toBe("pending")

    healthy = true
    const second = await start()
    const delivered = await deliveryReaches("wh_restart", "succeeded")
    const received = receiver.at("/restart")
    expect(received.length).toBe(beforeRestart + 1)
    expect(new Set(received.map((r) => r.headers["webhook-id"]))).toEqual(new Set([delivered.messageId]))
    expect(JSON.parse(received.at(-1)!.body).data.id).toBe(res.body.id)
    expect(await stop(second)).toBe(0)
  })

  it("on SIGTERM lets an attempt in flight finish and record its outcome, so nothing is sent twice", async () => {
    receiver.on("/drain", () => ({ status: 200, delayMs: 1_500 }))
    const server = await start()
    const res = await post(server, "org_drain")
    expect(res.status).toBe(200)
    await receiver.waitFor("/drain", 1)
    const stopping = Date.now()
    expect(await stop(server)).toBe(0)
    // It waited for the receiver's answer (about 1.5 s after the request arrived).
    expect(Date.now() - stopping).toBeGreaterThan(1_000)
    expect(await deliveryOf("wh_drain")).toMatchObject({ status: "succeeded", attempts: 1 })
    const again = await start()
    await new Promise((r) => setTimeout(r, 1_000))
    expect(receiver.at("/drain")).toHaveLength(1)
    expect(await stop(again)).toBe(0)
  })

  it("with WEBHOOK_WORKER=false the server sends nothing; two dedicated workers then deliver 100 posts, none twice", async () => {
    const api = await start({ WEBHOOK_WORKER: "false" })
    const ids: Array<string> = []
    for (let i = 0; i < 100; i += 10) {
      const batch = await Promise.all(Array.from({ length: 10 }, (_, j) => post(api, "org_many", `Post ${i + j}`)))
      for (const res of batch) {
        expect(res.status).toBe(200)
        ids.push(res.body.id)
      }
    }
    await new Promise((r) => setTimeout(r, 1_000))
    expect(receiver.at("/many")).toEqual([])

    worker()
    worker()
    const received = await receiver.waitFor("/many", 100)
    // Anything sent twice would arrive within this second.
    await new Promise((r) => setTimeout(r, 1_000))
    expect(receiver.at("/many")).toHaveLength(100)
    expect(new Set(received.map((r) => r.headers["webhook-id"])).size).toBe(100)
    expect(received.map((r) => JSON.parse(r.body).data.id).sort()).toEqual([...ids].sort())
    const statuses = await db.query((sql) =>
      sql`SELECT status, count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = 'wh_many' GROUP BY status`
    )
    expect(statuses).toEqual([{ status: "succeeded", n: 100 }])
  })

  it("refuses to run a dedicated worker without DATABASE_URL", async () => {
    const alone = spawnScript(workerScript, [], { LOG_LEVEL: "error" })
    expect(await alone.exited).toBe(1)
    expect(alone.output()).toBe("hearken: Invalid configuration: DATABASE_URL must be set: a dedicated worker needs PostgreSQL\n")
  })

  it("lists failed deliveries and redelivers one under the same webhook-id (npm run webhooks)", async () => {
    let accept = false
    receiver.on("/cli", () => accept ? { status: 200 } : { status: 410, body: "gone" })
    const api = await start({ WEBHOOK_WORKER: "false" })
    const res = await post(api, "org_cli")
    expect(res.status).toBe(200)
    // The dedicated workers of the previous test are still running.
    const failed = await deliveryReaches("wh_cli", "failed")

    const listed = await cli("failed")
    expect(listed.code).toBe(0)
    expect(listed.output).toContain(`${failed.id}  `)
    expect(listed.output).toContain(`endpoint wh_cli (${receiver.url("/cli")})  message ${failed.messageId}  1 attempt(s)  HTTP 410  answer: "gone"`)
    const json = await cli("failed", "--json")
    expect(json.output.trim().split("\n").map((line) => JSON.parse(line))).toContainEqual(
      expect.objectContaining({ id: failed.id, messageId: failed.messageId, endpointId: "wh_cli", attempts: 1, lastStatus: 410, lastError: "HTTP 410" })
    )

    accept = true
    const redelivered = await cli("redeliver", failed.id)
    expect(redelivered).toEqual({
      code: 0,
      output: `Queued ${failed.id} again (was failed); it keeps webhook-id ${failed.messageId}.\n`
    })
    await deliveryReaches("wh_cli", "succeeded")
    expect(receiver.at("/cli").map((r) => r.headers["webhook-id"])).toEqual([failed.messageId, failed.messageId])
    expect((await cli("failed")).output).not.toContain(failed.id)

    expect(await cli("redeliver", "whd_nope")).toEqual({ code: 1, output: "No delivery whd_nope.\n" })
    expect((await cli("redeliver")).code).toBe(2)
    await stop(api)
  })

  it("resumes a paused endpoint, whose held deliveries then go out (npm run webhooks -- resume)", async () => {
    await db.query((sql) => sql`UPDATE webhook_endpoints SET paused_at = now(), consecutive_failures = 50 WHERE id = 'wh_cli'`)
    const api = await start({ WEBHOOK_WORKER: "false" })
    const before = receiver.at("/cli").length
    const res = await post(api, "org_cli", "While paused")
    expect(res.status).toBe(200)
    expect((await deliveryOf("wh_cli")).status).toBe("held")
    await new Promise((r) => setTimeout(r, 700))
    expect(receiver.at("/cli")).toHaveLength(before)

    expect(await cli("resume", "wh_cli")).toEqual({ code: 0, output: "Resumed wh_cli; 1 held delivery is due now.\n" })
    await deliveryReaches("wh_cli", "succeeded")
    expect(JSON.parse(receiver.at("/cli").at(-1)!.body).data.title).toBe("While paused")
    expect(await cli("resume", "wh_cli")).toEqual({ code: 0, output: "Endpoint wh_cli was not paused; its failure count is reset.\n" })
    expect(await cli("resume", "wh_nope")).toEqual({ code: 1, output: "No webhook endpoint wh_nope.\n" })
    await stop(api)
  })
})
