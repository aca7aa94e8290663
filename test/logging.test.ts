import { mkdtemp, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { widgetClient } from "./support/client.js"
import { Collector } from "./support/collector.js"
import { createDatabase, type TestDatabase } from "./support/database.js"
import { baseFixture } from "./support/fixtures.js"
import { processGroup, type ServerProcess } from "./support/process.js"
import { eventually } from "./support/wait.js"

/**
 * Logs (decision 0013): `LOG_FORMAT=json` writes one JSON object per line, and a
 * 500 logs its cause once with the trace id its body shows in `detail`.
 * `org_nostatus` has no post statuses: creating a post there is a 500.
 */
let db: TestDatabase
let seedFile: string
const collector = await Collector.start()
const servers = processGroup(() => ({ DATABASE_URL: db.url, SEED_FILE: seedFile, LOG_LEVEL: "info" }))

beforeAll(async () => {
  db = await createDatabase()
  const dir = await mkdtemp(join(tmpdir(), "hearken-logging-"))
  seedFile = join(dir, "fixture.json")
  await writeFile(seedFile, JSON.stringify(baseFixture()))
})
afterAll(async () => {
  servers.killAll()
  await collector.close()
  await db?.drop()
})

const title = "Log me not 5e2b"
const failing = (server: ServerProcess) =>
  widgetClient(server).feedback({
    organizationId: "org_nostatus",
    boardId: "b_nostatus",
    title,
    content: "<p>private words 61aa</p>"
  })

const lines = (text: string) => text.split("\n").filter((line) => line !== "")

describe("LOG_FORMAT=json", () => {
  it("writes JSON lines, and a 500 logs its cause once with the trace id of its body's detail", async () => {
    const server = await servers.start({
      LOG_FORMAT: "json",
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_BSP_SCHEDULE_DELAY: "100"
    })
    const res = await failing(server)
    expect(res.status).toBe(500)
    expect(res.body).toEqual({
      _tag: "InternalServerError",
      message: "The organization has no post statuses configured",
      detail: expect.stringMatching(/^[0-9a-f]{32}$/)
    })
    const traceId: string = res.body.detail
    expect(res.headers.get("x-trace-id")).toBe(traceId)

    const logged = await eventually("the 500's log line", async () => {
      const found = lines(server.stdout()).map((line) => JSON.parse(line)).filter((entry) => entry.traceId === traceId)
      return found.length > 0 ? found : undefined
    })
    expect(await servers.stop(server)).toBe(0)

    // Every line is one JSON object with a level, a message and an ISO timestamp.
    const entries = lines(server.stdout()).map((line) => JSON.parse(line) as Record<string, unknown>)
    for (const entry of entries) {
      expect(entry["level"]).toMatch(/^(TRACE|DEBUG|INFO|WARN|ERROR|FATAL)$/)
      expect(typeof entry["message"]).toBe("string")
      expect(new Date(String(entry["timestamp"])).toISOString()).toBe(entry["timestamp"])
    }
    expect(entries.some((entry) => entry["level"] === "INFO" && String(entry["message"]).startsWith("Listening on"))).toBe(true)
    // The first start on a fresh database names every migration it applied, in order (docs/operations.md: "Upgrades").
    const migrations = entries.filter((entry) => String(entry["message"]).startsWith("Migrations applied: "))
    expect(migrations).toHaveLength(1)
    expect(migrations[0]!["level"]).toBe("INFO")
    expect(migrations[0]!["message"]).toMatch(/^Migrations applied: 0001_initial, 0002_contacts, (\d{4}_[a-z0-9_]+, )*0016_webhook_previous_secrets(, \d{4}_[a-z0-9_]+)*$/)

    // Logged once, with its cause and the ids of the span it happened in.
    const errors = entries.filter((entry) => entry["level"] === "ERROR")
    expect(errors).toHaveLength(1)
    expect(logged).toEqual(errors)
    const [error] = errors as [Record<string, any>]
    expect(error["message"]).toBe("Request failed: The organization has no post statuses configured")
    expect(error["spanId"]).toMatch(/^[0-9a-f]{16}$/)
    expect(error["annotations"]).toEqual({ traceId })
    expect(error["cause"]).toContain("InternalServerError")

    // The span the log names is the request's HTTP span, as exported.
    const http = await collector.waitFor("the 500's span", (span) => span.traceId === traceId && span.kind === 2)
    expect(http.spanId).toBe(error["spanId"])
    expect(http.attributes["http.response.status_code"]).toBe(500)

    // Request bodies are never logged.
    expect(server.stdout() + server.stderr()).not.toContain("5e2b")
    expect(server.stdout() + server.stderr()).not.toContain("61aa")
  })

  it("stays plain text by default, and without an exporter a 500 carries no trace id", async () => {
    const server = await servers.start()
    const res = await failing(server)
    expect(res.status).toBe(500)
    expect(res.body).toEqual({ _tag: "InternalServerError", message: "The organization has no post statuses configured" })
    expect(res.headers.get("x-trace-id")).toBeNull()
    const line = await eventually("the 500's log line", async () =>
      lines(server.stdout()).find((line) => line.includes("Request failed: The organization has no post statuses configured")))
    expect(line).toMatch(/^\[[^\]]+\] ERROR /)
    expect(line).not.toContain("traceId")
    expect(() => JSON.parse(line)).toThrow()
    // The second start on the same database has nothing to apply, and says so.
    expect(lines(server.stdout()).filter((line) => /Migrations applied|Database schema/.test(line)))
      .toEqual([expect.stringMatching(/^\[[^\]]+\] INFO \(#\d+\): Database schema up to date \((1[6-9]|[2-9]\d) migrations\)$/)])
    expect(await servers.stop(server)).toBe(0)
  })
})
