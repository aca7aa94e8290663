/**
 * The embedded database: PGlite served over the PostgreSQL wire protocol on
 * a loopback port, in a child process so that its queries never block the
 * server's event loop. The parent sends nothing; this process reports
 * `{ port }` (or `{ error }`) over IPC and exits when the parent goes away.
 */
import { PGlite } from "@electric-sql/pglite"
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm"
import { vector } from "@electric-sql/pglite-pgvector"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import * as fs from "node:fs"
import * as path from "node:path"

const dir = process.env["PGLITE_DIR"] ?? ".data/pglite"
const inMemory = dir === "memory"
const lockFile = path.join(dir, "hearken.lock")

const send = (message: { port: number } | { error: string }) => process.send?.(message)

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** PGlite opens a directory that another process holds without complaint, so we lock it ourselves. */
const acquireLock = () => {
  fs.mkdirSync(dir, { recursive: true })
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(lockFile, String(process.pid), { flag: "wx" })
      return
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
      const holder = Number(fs.readFileSync(lockFile, "utf8"))
      if (Number.isInteger(holder) && holder > 0 && isAlive(holder)) {
        throw new Error(`PGLITE_DIR ${dir} is in use by process ${holder}; stop it or choose another PGLITE_DIR`)
      }
      fs.rmSync(lockFile, { force: true })
    }
  }
  throw new Error(`could not lock PGLITE_DIR ${dir}`)
}

const releaseLock = () => {
  if (inMemory) return
  try {
    if (fs.readFileSync(lockFile, "utf8") === String(process.pid)) fs.rmSync(lockFile)
  } catch {
    // already gone
  }
}

const main = async () => {
  if (!inMemory) acquireLock()
  const db = await PGlite.create({
    ...(inMemory ? {} : { dataDir: dir }),
    extensions: { vector, pg_trgm }
  })
  const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0, maxConnections: 1 })
  await server.start()
  const port = Number(server.getServerConn().split(":").pop())
  let stopping = false
  const stop = async () => {
    if (stopping) return
    stopping = true
    await server.stop().catch(() => undefined)
    await db.close().catch(() => undefined)
    releaseLock()
    process.exit(0)
  }
  process.on("disconnect", stop)
  process.on("SIGTERM", stop)
  process.on("SIGINT", stop)
  send({ port })
}

main().catch((error: unknown) => {
  releaseLock()
  send({ error: error instanceof Error ? error.message : String(error) })
  process.exit(1)
})
