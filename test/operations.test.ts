import { execFile, spawn } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { mkdir, mkdtemp, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { ConfigProvider, Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { loadServerConfig } from "../packages/server/src/config/ServerConfig.js"
import { createDatabase, type TestDatabase } from "./support/database.js"
import { baseFixture } from "./support/fixtures.js"
import { freePort, processGroup, waitForHealth } from "./support/process.js"
import { endpoint } from "./support/receiver.js"
import { getJson, postJson, startServerOn, writeFixtureFile } from "./support/server.js"

/**
 * docs/operations.md, run: the systemd unit (`systemd-analyze verify`, then the server started and
 * stopped as the unit says), the environment file, the PostgreSQL backup and restore
 * (`pg_dump --format=custom --file=hearken.dump "$DATABASE_URL"` and
 * `pg_restore --no-owner --exit-on-error --dbname="$RESTORE_URL" hearken.dump`, as written), the
 * PGlite restore drill (`mkdir -p "$BACKUP_DIR"` and `cp -a "$PGLITE_DIR/." "$BACKUP_DIR/"` as
 * written, into a directory that exists already), a rollback (an older version on a newer
 * schema), and the Prometheus blocks (every `hearken_` metric they name is served). The blocks
 * are read from the document, so the document is what is tested.
 */

const run = promisify(execFile)
const root = join(import.meta.dirname, "..")
const doc = readFileSync(join(root, "docs", "operations.md"), "utf8")

/** The document's fenced blocks with their info string. */
const blocks = [...doc.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((match) => ({ lang: match[1]!, text: match[2]! }))
const block = (lang: string, holding: string) => {
  const found = blocks.filter((b) => b.lang === lang && b.text.includes(holding))
  if (found.length !== 1) throw new Error(`docs/operations.md: expected one ${lang} block holding ${JSON.stringify(holding)}, found ${found.length}`)
  return found[0]!.text
}

const sh = (script: string, env: Record<string, string>, cwd: string) =>
  run("sh", ["-ec", script], { cwd, env: { PATH: process.env["PATH"] ?? "", ...env } })

/** `[Section]` → key → value of an ini-style unit. */
const unitEntries = (text: string) => {
  const entries = new Map<string, string>()
  for (const line of text.split("\n")) {
    const pair = /^([A-Za-z]+)=(.*)$/.exec(line)
    if (pair !== null) entries.set(pair[1]!, pair[2]!)
  }
  return entries
}

const systemdAnalyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].find((path) => existsSync(path))

describe("the systemd unit in docs/operations.md", { timeout: 90_000 }, () => {
  const unit = block("ini", "[Service]").replaceAll("/opt/hearken", root)

  it.skipIf(systemdAnalyze === undefined)(
    `passes systemd-analyze verify${systemdAnalyze === undefined ? " (skipped: systemd-analyze is not installed on this machine)" : ""}`,
    async () => {
      const dir = await mkdtemp(join(tmpdir(), "hearken-unit-"))
      const file = join(dir, "hearken.service")
      await writeFile(file, unit)
      const result = await run(systemdAnalyze!, ["verify", file]).then(
        ({ stdout, stderr }) => ({ code: 0, output: stdout + stderr }),
        (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, output: error.stdout + error.stderr })
      )
      // Nothing said: a directive it cannot parse is only a warning, with exit code 0.
      expect(result).toEqual({ code: 0, output: "" })
      // And the check is real: a unit whose ExecStart does not exist fails it.
      await writeFile(file, unit.replace(`ExecStart=${root}`, "ExecStart=/nonexistent"))
      await expect(run(systemdAnalyze!, ["verify", file])).rejects.toMatchObject({ code: 1 })
    }
  )

  it("its ExecStart, in its WorkingDirectory, serves; its KillSignal stops it with exit code 0 within TimeoutStopSec", async () => {
    const entries = unitEntries(unit)
    const [command, ...args] = entries.get("ExecStart")!.split(" ")
    expect(entries.get("WorkingDirectory")).toBe(root)
    expect(existsSync(command!)).toBe(true)
    const port = await freePort()
    const pglite = await mkdtemp(join(tmpdir(), "hearken-unit-data-"))
    const child = spawn(command!, args, {
      cwd: entries.get("WorkingDirectory")!,
      env: { PATH: process.env["PATH"] ?? "", PORT: String(port), HOST: "127.0.0.1", PGLITE_DIR: join(pglite, "db") },
      stdio: "ignore"
    })
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
    try {
      await waitForHealth(`http://127.0.0.1:${port}`, 60_000)
      const signal = entries.get("KillSignal") as NodeJS.Signals
      expect(signal).toBe("SIGTERM")
      const started = performance.now()
      child.kill(signal)
      expect(await exited).toBe(0)
      expect(performance.now() - started).toBeLessThan(Number(entries.get("TimeoutStopSec")) * 1000)
    } finally {
      child.kill("SIGKILL")
    }
  })

  it("the environment file's values are all accepted, as the server reads them", async () => {
    const env = Object.fromEntries(
      block("ini", "DATABASE_URL=").trim().split("\n").map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)])
    )
    expect(Object.keys(env)).toContain("PUBLIC_URL")
    const config = await Effect.runPromise(loadServerConfig.pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env })))))
    expect(config.publicUrl.origin).toBe(env["PUBLIC_URL"])
    expect(config.metricsHost).toBe(env["METRICS_HOST"])
    expect(config.trustProxy).toBe(Number(env["TRUST_PROXY"]))
  })
})

describe("PostgreSQL: backup with pg_dump, restore with pg_restore, as docs/operations.md writes them", { timeout: 120_000 }, () => {
  let source: TestDatabase
  let restored: TestDatabase
  let dir: string
  const processes = processGroup(() => ({ LOG_LEVEL: "info" }))
  const fixture = baseFixture()
  ;(fixture.organizations[0] as Record<string, unknown>)["webhooks"] = [endpoint("wh_backup", "https://hooks.example.com/hearken")]

  beforeAll(async () => {
    ;[source, restored, dir] = await Promise.all([createDatabase(), createDatabase(), mkdtemp(join(tmpdir(), "hearken-backup-"))])
  })
  afterAll(async () => {
    processes.killAll()
    await source?.drop()
    await restored?.drop()
  })

  it("a post written before the dump is served by a server on the restored database; an older version starts on a newer schema", async () => {
    const metricsPort = await freePort()
    const server = await startServerOn(source, {
      SEED_FILE: await writeFixtureFile(fixture),
      METRICS_PORT: String(metricsPort),
      METRICS_HOST: "127.0.0.1"
    })
    let postId: string
    let served: Set<string>
    try {
      const created = await postJson(`${server.api}/feedback`, {
        organizationId: "org_acme", boardId: "b_feat", title: "Backups before upgrades", content: "<p>please</p>"
      })
      expect(created.status).toBe(200)
      postId = created.body.id
      // While it runs: pg_dump takes a consistent snapshot.
      await sh(block("sh", "pg_dump"), { DATABASE_URL: source.url, RESTORE_URL: restored.url }, dir)
      const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((res) => res.text())
      served = new Set([...metrics.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1]!))
    } finally {
      await server.close()
    }
    expect(existsSync(join(dir, "hearken.dump"))).toBe(true)

    const again = await startServerOn(restored)
    try {
      const suggestions = await postJson(`${again.api}/suggestions`, { organizationId: "org_acme", boardId: "b_feat", title: "Backups before upgrades", content: "" })
      expect(suggestions.status).toBe(200)
      expect(suggestions.body.map((s: { id: string }) => s.id)).toContain(postId)
    } finally {
      await again.close()
    }
    expect(await restored.query((sql) => sql`SELECT id, url FROM webhook_endpoints`)).toEqual([
      { id: "wh_backup", url: "https://hooks.example.com/hearken" }
    ])
    expect(await restored.query((sql) => sql`SELECT count(*)::int AS n FROM organization_jwt_secrets WHERE organization_id = 'org_acme'`))
      .toEqual([{ n: 1 }])
    const [migrations] = await restored.query((sql) => sql`SELECT count(*)::int AS n FROM effect_sql_migrations`)
    const [original] = await source.query((sql) => sql`SELECT count(*)::int AS n FROM effect_sql_migrations`)
    expect(migrations).toEqual(original)

    // Rolling back: the database records a migration this version does not know, as after an upgrade it was rolled back from.
    await restored.query((sql) => sql`INSERT INTO effect_sql_migrations (migration_id, name) VALUES (9999, 'from_a_newer_version') RETURNING migration_id`)
    const older = await processes.start({ DATABASE_URL: restored.url })
    try {
      expect((await getJson(`${older.origin}/health`)).body).toEqual({ status: "ok" })
      expect((await getJson(`${older.origin}/api/widget/v1/boards?organizationId=org_acme`)).status).toBe(200)
    } finally {
      expect(await processes.stop(older)).toBe(0)
    }
    expect(older.stdout()).toMatch(
      /WARN \(#\d+\): Database schema is newer than this version: it records 9999_from_a_newer_version, this version knows up to \d{4}_[a-z0-9_]+; started without migrating/
    )
    expect(older.stdout()).not.toMatch(/Migrations applied|Database schema up to date/)

    // The Prometheus blocks name only metrics a server serves.
    const named = new Set(
      blocks.filter((b) => b.lang === "yaml").flatMap((b) => [...b.text.matchAll(/\b(hearken_[a-z_]+)\b/g)].map((match) => match[1]!))
    )
    expect(named.size).toBeGreaterThan(3)
    for (const name of named) expect(served!, `${name} is served`).toContain(name)
  })

  it("the YAML blocks parse, as Prometheus would read them", async () => {
    const { load } = (await import("js-yaml" as string)) as { load: (text: string) => unknown }
    const yaml = blocks.filter((b) => b.lang === "yaml").map((b) => load(b.text) as Record<string, any>)
    expect(yaml).toHaveLength(2)
    expect(yaml[0]!["scrape_configs"][0]["job_name"]).toBe("hearken")
    const rules = yaml[1]!["groups"][0]["rules"] as Array<Record<string, unknown>>
    expect(rules.map((rule) => rule["alert"])).toEqual([
      "HearkenWebhookBacklogOld", "HearkenHigh5xxRate", "HearkenRateLimiterUnavailable", "HearkenTraceSpansDropped"
    ])
    for (const rule of rules) expect(typeof rule["expr"]).toBe("string")
  })
})

describe("the PGlite restore drill of docs/operations.md", { timeout: 180_000 }, () => {
  let dir: string
  const servers = processGroup(() => ({ LOG_LEVEL: "info", RATE_LIMIT_MULTIPLIER: "1000" }))
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "hearken-drill-"))
  })
  afterAll(() => servers.killAll())

  it("stop, copy the directory with the document's line, start on the copy: the post is there", async () => {
    const original = join(dir, "pglite")
    const backup = join(dir, "backup")
    const first = await servers.start({ PGLITE_DIR: original })
    const created = await postJson(`${first.origin}/api/widget/v1/feedback`, {
      organizationId: "org_demo", boardId: "b_demo_features", title: "Restore drill 7f3a", content: "<p>from before the backup</p>"
    })
    expect(created.status).toBe(200)
    expect(await servers.stop(first)).toBe(0)
    expect(first.stdout()).toMatch(/INFO \(#\d+\): Migrations applied: 0001_initial, /)

    // The backup directory exists already: the copy must land in it, not in a directory inside it.
    await mkdir(backup)
    await sh(block("sh", "cp -a"), { PGLITE_DIR: original, BACKUP_DIR: backup }, dir)

    const restored = await servers.start({ PGLITE_DIR: backup })
    try {
      const found = await postJson(`${restored.origin}/api/widget/v1/suggestions`, {
        organizationId: "org_demo", boardId: "b_demo_features", title: "Restore drill 7f3a", content: ""
      })
      expect(found.status).toBe(200)
      expect(found.body[0]).toMatchObject({ id: created.body.id, title: "Restore drill 7f3a", slug: created.body.slug })
    } finally {
      expect(await servers.stop(restored)).toBe(0)
    }
    expect(restored.stdout()).toMatch(/INFO \(#\d+\): Database schema up to date \(\d+ migrations\)/)
    expect(restored.stdout()).not.toContain("Migrations applied")
  })
})
