/** What the benchmarks share: a fresh database, the server as a process, percentiles. */
import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { join, resolve as resolvePath } from "node:path"
import { withClient } from "../test/support/database.ts"
import { productionNodeOptions } from "../test/support/flood.ts"
import { freePort } from "../test/support/net.ts"
import { memory } from "../test/support/watch.ts"

/** An admin URL: BENCH_DATABASE_URL, or the local PostgreSQL. */
export const adminUrl = process.env["BENCH_DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/postgres"

export const dist = join(import.meta.dirname, "..", "packages", "server", "dist")

export { withClient as withSql }

/** A new, empty database; `drop` removes it (unless BENCH_KEEP=1, which prints its URL instead). */
export const freshDatabase = async (prefix: string) => {
  const name = `hearken_${prefix}_${randomBytes(4).toString("hex")}`
  await withClient(adminUrl, (sql) => sql.unsafe(`CREATE DATABASE ${name}`))
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    drop: async () => {
      if (process.env["BENCH_KEEP"] === "1") console.log(`kept ${url.toString()}`)
      else await withClient(adminUrl, (sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
    }
  }
}

/**
 * The V8 flags servers run with, as `npm start` and the systemd unit in
 * docs/operations.md give them (decision 0011); BENCH_NODE_FLAGS replaces them, to compare.
 */
export const serverNodeFlags = (process.env["BENCH_NODE_FLAGS"] ?? productionNodeOptions)
  .split(" ").filter((flag) => flag !== "")

/**
 * `node packages/server/dist/SCRIPT` (or `node SCRIPT`, given an absolute
 * path) on a free loopback port with `env` (plus PATH); for anything but
 * `worker.js`, resolves once `/health` answers. `pid` is the process's.
 */
export const startProcess = async (script: "main.js" | "worker.js" | (string & {}), env: Record<string, string>) => {
  const port = await freePort()
  const child = spawn(process.execPath, [...serverNodeFlags, resolvePath(dist, script)], {
    env: { PATH: process.env["PATH"] ?? "", HOST: "127.0.0.1", PORT: String(port), LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "inherit", "inherit"]
  })
  const origin = `http://127.0.0.1:${port}`
  if (script !== "worker.js") {
    // Each probe gives up after a second, so that a process that never answers cannot stall the bench.
    const probe = () =>
      fetch(`${origin}/health`, { signal: AbortSignal.timeout(1_000) }).then((r) => r.arrayBuffer().then(() => r.status), () => 0)
    for (let i = 0; (await probe()) !== 200; i++) {
      if (i > 300 || child.exitCode !== null) throw new Error(`${script} did not start`)
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  return {
    origin,
    pid: child.pid!,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve()
        child.once("exit", () => resolve())
        child.kill("SIGTERM")
      })
  }
}

export { memory }

/** The value below which a share `p` of `sorted` lies. */
export const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!
