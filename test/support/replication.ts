import { execFile } from "node:child_process"
import { randomBytes } from "node:crypto"
import { promisify } from "node:util"
import type { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { withClient } from "./database.js"
import { eventually } from "./wait.js"

/**
 * The PostgreSQL replication pair scripts/prepare-services.sh starts for test/read-replica.test.ts:
 * a primary of its own (127.0.0.1:5434) and its streaming standby (127.0.0.1:5435), made with
 * `pg_basebackup -R`, under /var/lib/hearken-replication (`HEARKEN_REPLICATION_*` as in the script).
 * The tests stop and start both; the server on 5432 that every other file uses is never touched.
 */
export const replication = {
  dir: process.env["HEARKEN_REPLICATION_DIR"] ?? "/var/lib/hearken-replication",
  primaryPort: process.env["HEARKEN_REPLICATION_PRIMARY_PORT"] ?? "5434",
  replicaPort: process.env["HEARKEN_REPLICATION_REPLICA_PORT"] ?? "5435"
}

export type Cluster = "primary" | "replica"

const portOf = (cluster: Cluster) => cluster === "primary" ? replication.primaryPort : replication.replicaPort
const urlOn = (cluster: Cluster, database: string) => `postgres://postgres@127.0.0.1:${portOf(cluster)}/${database}`

const run = promisify(execFile)
const pgCtl = "/usr/lib/postgresql/15/bin/pg_ctl"

/** `pg_ctl` on one of the pair, as postgres when this runs as root (pg_ctl refuses root), as the script started it. */
const control = async (cluster: Cluster, args: ReadonlyArray<string>) => {
  const dir = `${replication.dir}/${cluster}`
  const command = [pgCtl, "-D", dir, ...args].map((a) => `'${a}'`).join(" ")
  if (process.getuid?.() === 0) await run("su", ["postgres", "-s", "/bin/sh", "-c", command])
  else await run("/bin/sh", ["-c", command])
}

/** Stops it fast (its sessions are ended, as a crash or a failover would), and waits until it is down. */
export const stop = (cluster: Cluster) => control(cluster, ["stop", "-m", "fast", "-w", "-s"])

/** Whether it is running (`pg_ctl status` exits 0). */
const running = (cluster: Cluster) => control(cluster, ["status"]).then(() => true, () => false)

/** Starts it again, unless it is running, and waits until it accepts connections. */
export const start = async (cluster: Cluster) => {
  if (!(await running(cluster))) await control(cluster, ["start", "-w", "-s", "-l", `${replication.dir}/${cluster}.log`])
  await eventually(`${cluster} to accept connections`, () =>
    withClient(urlOn(cluster, "postgres"), (sql) => sql`SELECT 1`).then(() => true, () => undefined), { timeoutMs: 30_000 })
}

/** Fails, saying what to run, unless the pair is up and 5435 streams from 5434. */
export const checkReplication = async () => {
  try {
    const [row] = await withClient(urlOn("replica", "postgres"), (sql) =>
      sql<{ standby: boolean }>`SELECT pg_is_in_recovery() AS standby`)
    if (row?.standby !== true) throw new Error(`127.0.0.1:${replication.replicaPort} is not a standby`)
    await withClient(urlOn("primary", "postgres"), (sql) => sql`SELECT 1`)
  } catch (error) {
    throw new Error(
      `the replication pair (127.0.0.1:${replication.primaryPort} and its standby 127.0.0.1:${replication.replicaPort}) ` +
        `is not running: run scripts/prepare-services.sh (${(error as Error).message})`
    )
  }
}

export interface ReplicatedDatabase {
  readonly name: string
  /** On the primary: `DATABASE_URL`. */
  readonly url: string
  /** The same database on the standby: `DATABASE_READ_URL`. */
  readonly readUrl: string
  readonly query: <T>(cluster: Cluster, f: (sql: SqlClient.SqlClient) => Effect.Effect<ReadonlyArray<T>, unknown>) => Promise<ReadonlyArray<T>>
  readonly drop: () => Promise<void>
}

/** A fresh database on the primary, once the standby has it too. */
export const createReplicatedDatabase = async (): Promise<ReplicatedDatabase> => {
  const name = `hearken_test_${randomBytes(6).toString("hex")}`
  await withClient(urlOn("primary", "postgres"), (sql) => sql.unsafe(`CREATE DATABASE ${name}`))
  await eventually("the new database on the standby", () =>
    withClient(urlOn("replica", name), (sql) => sql`SELECT 1`).then(() => true, () => undefined))
  return {
    name,
    url: urlOn("primary", name),
    readUrl: urlOn("replica", name),
    query: (cluster, f) => withClient(urlOn(cluster, name), f),
    drop: () => withClient(urlOn("primary", "postgres"), (sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined)
  }
}

/** Pauses the standby's replay (it still receives the WAL): a lag that lasts until `resumeReplay`. */
export const pauseReplay = () => withClient(urlOn("replica", "postgres"), (sql) => sql`SELECT pg_wal_replay_pause()`)
export const resumeReplay = () => withClient(urlOn("replica", "postgres"), (sql) => sql`SELECT pg_wal_replay_resume()`)
