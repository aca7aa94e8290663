/**
 * What one request costs, beyond its latency: the CPU time of the server
 * process, of PostgreSQL's processes and of Redis, and PostgreSQL's own work
 * (transactions, buffer reads, rows, WAL), each divided by the requests of a
 * measured run. docs/operations.md ("Scale-out on paper") derives instances
 * and database sizes from them.
 *
 * - CPU is the kernel's account (`/proc/PID/stat`, user + system): exact, and
 *   steadier than req/s (a request waiting for a core costs no CPU), though it
 *   still moves with the machine's speed.
 *   PostgreSQL's is the postmaster's and every child's (backends, WAL writer,
 *   checkpointer): the cluster behind BENCH_DATABASE_URL, not another on the
 *   machine. The load generator runs in this process and is not counted.
 * - Transactions, blocks and rows come from `pg_stat_database` for the
 *   bench's database. Backends publish them at most once a second under load,
 *   so a snapshot misses up to a second's worth; before and after miss about
 *   as much, and over a 10-second run the error is a few percent.
 * - WAL is `pg_current_wal_lsn()`'s difference: exact, cluster-wide.
 */
import { execFileSync } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import { Effect } from "effect"
import { Redis } from "ioredis"
import { withSql } from "../support.ts"

const ticksPerSecond = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100
  } catch {
    return 100
  }
})()

/**
 * `pid`'s user + system CPU time in ms, that of its children that have exited and been waited
 * for, and its parent's pid (undefined once it is gone).
 */
const cpuOf = (pid: number): { readonly ms: number; readonly exitedChildrenMs: number; readonly ppid: number } | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    // After "pid (comm) ": state ppid … utime (14th field) stime cutime cstime (17th).
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ").map(Number)
    const ms = (ticks: number) => (ticks * 1000) / ticksPerSecond
    return { ms: ms(fields[11]! + fields[12]!), exitedChildrenMs: ms(fields[13]! + fields[14]!), ppid: fields[1]! }
  } catch {
    return undefined
  }
}

/**
 * PostgreSQL's processes of one cluster: the postmaster, its live children (backends, WAL writer,
 * checkpointer, autovacuum) and those that have exited, which the postmaster waits for, so that
 * a backend closing between two snapshots takes nothing away.
 */
const clusterCpuMs = (postmaster: number) => {
  const self = cpuOf(postmaster)
  let total = self ? self.ms + self.exitedChildrenMs : 0
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    const cpu = cpuOf(Number(entry))
    if (cpu?.ppid === postmaster) total += cpu.ms
  }
  return total
}

/** CPU in ms; PostgreSQL's counts for the bench's database. */
interface Counts {
  readonly serverCpuMs: number
  readonly postgresCpuMs: number
  readonly redisCpuMs: number
  readonly transactions: number
  /** Shared buffers touched (hit or read), and of those read from the OS. */
  readonly blocks: number
  readonly blocksRead: number
  readonly rowsRead: number
  readonly rowsWritten: number
}

/** The counters at one moment, and where the WAL was. */
export interface CostSnapshot extends Counts {
  readonly walLsn: string
}

/** Per request: what a measured run cost, divided by its requests. */
export interface Costs extends Counts {
  readonly walBytes: number
}

/** A meter for the database at `url` and the Redis at `redisUrl`. */
export const costMeter = async (url: string, redisUrl: string) => {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 })
  await redis.connect()
  const info = await redis.info("server")
  const redisPid = Number(/^process_id:(\d+)/m.exec(info)?.[1] ?? 0)
  await redis.quit()
  // A backend's parent is the postmaster.
  // Read while the backend lives: once its connection closes, its /proc entry goes.
  const postmaster = await withSql(url, (sql) =>
    Effect.flatMap(sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`, ([backend]) => {
      const parent = cpuOf(backend!.pid)?.ppid
      return parent === undefined
        ? Effect.fail(new Error(`costs: no /proc entry for the PostgreSQL backend ${backend!.pid}`))
        : Effect.succeed(parent)
    }))

  const snapshot = async (serverPid: number): Promise<CostSnapshot> => {
    const [row] = await withSql(url, (sql) =>
      sql<{ transactions: string; blocks: string; blocksRead: string; rowsRead: string; rowsWritten: string; walLsn: string }>`
        SELECT (xact_commit + xact_rollback)::text AS transactions, (blks_hit + blks_read)::text AS blocks,
               blks_read::text AS "blocksRead", (tup_returned + tup_fetched)::text AS "rowsRead",
               (tup_inserted + tup_updated + tup_deleted)::text AS "rowsWritten", pg_current_wal_lsn()::text AS "walLsn"
        FROM pg_stat_database WHERE datname = current_database()`
    )
    return {
      serverCpuMs: cpuOf(serverPid)?.ms ?? NaN,
      postgresCpuMs: clusterCpuMs(postmaster),
      redisCpuMs: redisPid > 0 ? cpuOf(redisPid)?.ms ?? NaN : NaN,
      transactions: Number(row!.transactions),
      blocks: Number(row!.blocks),
      blocksRead: Number(row!.blocksRead),
      rowsRead: Number(row!.rowsRead),
      rowsWritten: Number(row!.rowsWritten),
      walLsn: row!.walLsn
    }
  }

  const walBytes = async (from: string, to: string) => {
    const [row] = await withSql(url, (sql) => sql<{ bytes: string }>`SELECT pg_wal_lsn_diff(${to}, ${from})::text AS bytes`)
    return Number(row!.bytes)
  }

  const perRequest = async (before: CostSnapshot, after: CostSnapshot, requests: number): Promise<Costs> => {
    const per = (key: keyof Counts) => (after[key] - before[key]) / requests
    return {
      serverCpuMs: per("serverCpuMs"),
      postgresCpuMs: per("postgresCpuMs"),
      redisCpuMs: per("redisCpuMs"),
      transactions: per("transactions"),
      blocks: per("blocks"),
      blocksRead: per("blocksRead"),
      rowsRead: per("rowsRead"),
      rowsWritten: per("rowsWritten"),
      walBytes: (await walBytes(before.walLsn, after.walLsn)) / requests
    }
  }

  return { snapshot, perRequest }
}

export type CostMeter = Awaited<ReturnType<typeof costMeter>>

/** The mean of each cost over rounds. */
export const meanCosts = (rounds: ReadonlyArray<Costs>): Costs => {
  const keys = Object.keys(rounds[0]!) as Array<keyof Costs>
  return Object.fromEntries(keys.map((k) => [k, rounds.reduce((a, r) => a + r[k], 0) / rounds.length])) as unknown as Costs
}
