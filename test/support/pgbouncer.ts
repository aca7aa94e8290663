import { execFile } from "node:child_process"
import { access, chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises"
import * as net from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { freePort } from "./net.js"
import { eventually } from "./wait.js"

const run = promisify(execFile)

/** Debian's PgBouncer, which scripts/prepare-services.sh installs. */
export const pgbouncerBinary = "/usr/sbin/pgbouncer"

export interface PrivatePgBouncer {
  readonly port: number
  readonly stop: () => Promise<void>
}

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port }, () => {
      socket.destroy()
      resolve(true)
    })
    socket.on("error", () => resolve(false))
  })

/**
 * A PgBouncer of the test's own, in transaction mode, on a free port of 127.0.0.1, in front of
 * 127.0.0.1:`serverPort` (any database name, trust): the shared one on 6432 points at 5432 only.
 * It gives up on a server and tries again within a second, so a test need not wait for its
 * defaults (15 s each). Runs as postgres when the test runs as root (PgBouncer refuses root).
 */
export const startPgBouncer = async (serverPort: number): Promise<PrivatePgBouncer> => {
  await access(pgbouncerBinary).catch(() => {
    throw new Error(`${pgbouncerBinary} is missing: run scripts/prepare-services.sh`)
  })
  const dir = await mkdtemp(join(tmpdir(), "hearken-pgbouncer-"))
  const port = await freePort()
  await writeFile(join(dir, "userlist.txt"), "\"postgres\" \"\"\n")
  await writeFile(
    join(dir, "pgbouncer.ini"),
    [
      "[databases]",
      `* = host=127.0.0.1 port=${serverPort}`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      "unix_socket_dir =",
      "auth_type = trust",
      `auth_file = ${dir}/userlist.txt`,
      "pool_mode = transaction",
      "ignore_startup_parameters = extra_float_digits",
      "server_connect_timeout = 1",
      "server_login_retry = 1",
      `logfile = ${dir}/pgbouncer.log`,
      `pidfile = ${dir}/pgbouncer.pid`,
      ""
    ].join("\n")
  )
  await chmod(dir, 0o777)
  const command = `${pgbouncerBinary} -d ${dir}/pgbouncer.ini`
  if (process.getuid?.() === 0) await run("su", ["postgres", "-s", "/bin/sh", "-c", command])
  else await run("/bin/sh", ["-c", command])
  await eventually("the private PgBouncer listening", async () => (await listening(port)) || undefined, { timeoutMs: 10_000 })
  const pid = Number((await readFile(join(dir, "pgbouncer.pid"), "utf8")).trim())
  return {
    port,
    stop: async () => {
      try {
        process.kill(pid, "SIGTERM")
        await eventually("the private PgBouncer gone", async () => {
          try {
            process.kill(pid, 0)
            return undefined
          } catch {
            return true
          }
        }, { timeoutMs: 10_000 })
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
    }
  }
}
