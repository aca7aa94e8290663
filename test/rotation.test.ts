import { execFile } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdtemp, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { SignJWT } from "jose"
import { Webhook, WebhookVerificationError } from "standardwebhooks"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { widgetClient } from "./support/client.js"
import { createDatabase, type TestDatabase } from "./support/database.js"
import { seedScript } from "./support/process.js"
import { Receiver, testWebhookSecret } from "./support/receiver.js"
import { startServerOn, type TestServer } from "./support/server.js"
import { eventually } from "./support/wait.js"

/**
 * docs/operations.md: "Re-seeding" and "Rotating secrets". `npm run seed -- FILE` against real
 * PostgreSQL while a server serves from it: the organization's webhooks and identity secrets
 * converge to the file, each run says what it changed, and a secret rotated with an overlap is
 * accepted (identity tokens) or verifies (webhook deliveries) while both are listed, and no longer
 * once the old one is removed.
 */

const run = promisify(execFile)

const oldJwt = "rotation-old-secret-0123456789abcdef012345"
const newJwt = "rotation-new-secret-0123456789abcdef012345"
const oldHook = testWebhookSecret
const newHook = `whsec_${randomBytes(24).toString("base64")}`

let db: TestDatabase
let server: TestServer
let receiver: Receiver
let dir: string
beforeAll(async () => {
  ;[db, receiver, dir] = await Promise.all([createDatabase(), Receiver.start(), mkdtemp(join(tmpdir(), "hearken-rotation-"))])
  // The endpoint to be dropped fails every attempt, and its retry waits long: its delivery is still pending when it is dropped.
  receiver.on("/dropped", () => ({ status: 503 }))
  expect((await seed(file({ jwtSecrets: [oldJwt], webhooks: [kept(oldHook), dropped] }))).code).toBe(0)
  server = await startServerOn(db, { WEBHOOK_ALLOW_PRIVATE_URLS: "true", WEBHOOK_RETRY_BASE_MS: "600000" })
}, 60_000)
afterAll(async () => {
  await server?.close()
  await receiver?.close()
  await db?.drop()
})

const kept = (secret: string, previousSecrets?: ReadonlyArray<string>) => ({
  id: "wh_kept",
  url: receiver.url("/kept"),
  secret,
  ...(previousSecrets === undefined ? {} : { previousSecrets }),
  events: ["feedback.post.created"]
})
const dropped = {
  get url() { return receiver.url("/dropped") },
  id: "wh_dropped",
  secret: oldHook,
  events: ["feedback.post.created"]
}

/** The one organization of these tests; `lists` gives its `jwtSecrets` and `webhooks` (left out when absent). */
const file = (lists: { readonly jwtSecrets?: ReadonlyArray<string>; readonly webhooks?: ReadonlyArray<unknown> }) => ({
  organizations: [{
    id: "org_rot",
    name: "Rotation",
    ...lists,
    statuses: [{ id: "st_rot", name: "Open", isDefault: true }],
    boards: [{ id: "b_rot", name: "Board", slug: "board", visibility: "public" }]
  }]
})

/** `npm run seed -- FILE` as an operator runs it, at the default log level; yields its exit code and its `Seeded …` lines. */
const seed = async (fixture: unknown) => {
  const path = join(dir, "rotation.json")
  await writeFile(path, JSON.stringify(fixture))
  try {
    const { stdout } = await run(process.execPath, [seedScript, path], { env: { PATH: process.env["PATH"] ?? "", DATABASE_URL: db.url } })
    return { code: 0, seeded: stdout.split("\n").flatMap((line) => /INFO .*?: (Seeded .*)$/.exec(line)?.[1] ?? []), stdout }
  } catch (error) {
    const e = error as { code: number; stderr: string }
    return { code: e.code, seeded: [], stdout: e.stderr }
  }
}

const token = (secret: string, kid?: string) =>
  new SignJWT({ email: "ops@example.com" }).setProtectedHeader({ alg: "HS256", ...(kid === undefined ? {} : { kid }) })
    .setAudience("org_rot").setIssuedAt().sign(new TextEncoder().encode(secret))

const submit = async (secret: string, kid?: string) =>
  widgetClient(server).feedback({
    organizationId: "org_rot",
    boardId: "b_rot",
    title: `Rotation ${randomBytes(4).toString("hex")}`,
    content: "<p>x</p>",
    token: await token(secret, kid)
  })

/** Verifies `delivery` as a receiver knowing only `secret` would, with the Standard Webhooks library. */
const verifies = (secret: string, delivery: { readonly headers: Record<string, unknown>; readonly body: string }) => {
  try {
    new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>)
    return true
  } catch (error) {
    if (error instanceof WebhookVerificationError) return false
    throw error
  }
}

const endpoints = () =>
  db.query((sql) => sql`SELECT id, secret, previous_secrets AS "previousSecrets" FROM webhook_endpoints WHERE organization_id = 'org_rot' ORDER BY id`)

describe("re-seeding converges webhooks and identity secrets to the file, and secrets rotate with an overlap", { timeout: 60_000 }, () => {
  it("1. the first file: an old identity secret and two endpoints signing with the old webhook secret", async () => {
    const res = await submit(oldJwt)
    expect(res.status).toBe(200)
    const [delivery] = await receiver.waitFor("/kept", 1)
    expect(String(delivery!.headers["webhook-signature"]).split(" ")).toHaveLength(1)
    expect(verifies(oldHook, delivery!)).toBe(true)
    expect(verifies(newHook, delivery!)).toBe(false)
    // The dropped endpoint's attempt failed; its retry waits ten minutes.
    await receiver.waitFor("/dropped", 1)
    await eventually("the failed attempt recorded", async () => {
      const [row] = await db.query((sql) => sql`SELECT count(*)::int AS n FROM webhook_deliveries
        WHERE endpoint_id = 'wh_dropped' AND status = 'pending' AND attempts = 1 AND lease_until IS NULL`)
      return (row as { n: number }).n === 1 || undefined
    })
  })

  it("2. the new secrets beside the old ones, the second endpoint dropped: both secrets work, its pending delivery goes with it", async () => {
    const result = await seed(file({ jwtSecrets: [newJwt, oldJwt], webhooks: [kept(newHook, [oldHook])] }))
    expect(result.code).toBe(0)
    expect(result.seeded).toEqual([
      "Seeded org_rot: statuses +0 ~0 =1, boards +0 ~0 =1, posts +0 ~0 =0, updates +0 ~0 =0, " +
      "webhooks +0 ~1 =0 -1 (deleted \"wh_dropped\"; 1 undelivered delivery dropped), identity secrets +1 =1 -0"
    ])
    expect(result.stdout).not.toContain(newJwt)
    expect(result.stdout).not.toContain(newHook)
    expect(await endpoints()).toEqual([{ id: "wh_kept", secret: newHook, previousSecrets: [oldHook] }])
    const [left] = await db.query((sql) => sql`SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = 'wh_dropped'`)
    expect(left).toEqual({ n: 0 })

    expect((await submit(oldJwt)).status).toBe(200)
    // No `kid` is needed, and one that names nothing is ignored: every secret is tried.
    expect((await submit(newJwt, "no-such-key")).status).toBe(200)
    const deliveries = await receiver.waitFor("/kept", 3)
    for (const delivery of deliveries.slice(1)) {
      // One signature per secret, in one header: a receiver knowing either one verifies the same delivery.
      expect(String(delivery.headers["webhook-signature"])).toMatch(/^v1,[A-Za-z0-9+/=]+ v1,[A-Za-z0-9+/=]+$/)
      expect(verifies(oldHook, delivery)).toBe(true)
      expect(verifies(newHook, delivery)).toBe(true)
    }
    expect(receiver.at("/dropped")).toHaveLength(1)
  })

  it("3. the old secrets removed: a token signed with the old one is refused, a delivery no longer verifies with it", async () => {
    const result = await seed(file({ jwtSecrets: [newJwt], webhooks: [kept(newHook)] }))
    expect(result.code).toBe(0)
    expect(result.seeded).toEqual([
      "Seeded org_rot: statuses +0 ~0 =1, boards +0 ~0 =1, posts +0 ~0 =0, updates +0 ~0 =0, webhooks +0 ~1 =0 -0, identity secrets +0 =1 -1"
    ])
    const refused = await submit(oldJwt)
    expect(refused.status).toBe(401)
    expect(refused.body).toMatchObject({ _tag: "UnauthorizedError", message: "token: signature does not match" })
    expect((await submit(newJwt)).status).toBe(200)
    const deliveries = await receiver.waitFor("/kept", 4)
    const last = deliveries[3]!
    expect(String(last.headers["webhook-signature"]).split(" ")).toHaveLength(1)
    expect(verifies(newHook, last)).toBe(true)
    expect(verifies(oldHook, last)).toBe(false)
  })

  it("4. the same file again changes nothing, and says so; a file without the lists leaves endpoints and secrets as they are", async () => {
    const again = await seed(file({ jwtSecrets: [newJwt], webhooks: [kept(newHook)] }))
    expect(again.seeded).toEqual([
      "Seeded org_rot: statuses +0 ~0 =1, boards +0 ~0 =1, posts +0 ~0 =0, updates +0 ~0 =0, webhooks +0 ~0 =1 -0, identity secrets +0 =1 -0"
    ])
    const without = await seed(file({}))
    expect(without.seeded).toEqual([
      "Seeded org_rot: statuses +0 ~0 =1, boards +0 ~0 =1, posts +0 ~0 =0, updates +0 ~0 =0, " +
      "webhooks not in the file (left as they are), identity secrets not in the file (left as they are)"
    ])
    expect(await endpoints()).toEqual([{ id: "wh_kept", secret: newHook, previousSecrets: [] }])
    expect((await submit(newJwt)).status).toBe(200)
    // An empty list is a list: every endpoint and every secret goes.
    const empty = await seed(file({ jwtSecrets: [], webhooks: [] }))
    expect(empty.seeded[0]).toMatch(/webhooks \+0 ~0 =0 -1 \(deleted "wh_kept"(?:; 1 undelivered delivery dropped)?\), identity secrets \+0 =0 -1$/)
    expect(await endpoints()).toEqual([])
    expect((await submit(newJwt)).body).toMatchObject({ _tag: "UnauthorizedError", message: "token: this organization accepts no identity tokens" })
  })
})
