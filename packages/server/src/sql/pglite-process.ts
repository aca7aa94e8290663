/**
 * The embedded database: PGlite served over the PostgreSQL wire protocol on
 * a loopback port, in a child process so that its queries never block the
 * server's event loop. The parent sends nothing; this process reports
 * `{ port }` (or `{ error }`) over IPC and exits when the parent goes away.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { makeDirectory } from "./makeDirectory.js"

const dir = process.env["PGLITE_DIR"] ?? ".data/pglite"
const inMemory = dir === "memory"
const lockFile = path.join(dir, "hearken.lock")

const send = (message: { port: number } | { error: string }) => {
  if (process.connected) process.send?.(message)
}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/**
 * The pid in the lock file, read without waiting: a FIFO (or anything but a file) put in its
 * place would block a plain read for ever.
 */
const lockHolder = () => {
  const fd = fs.openSync(lockFile, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK)
  try {
    if (!fs.fstatSync(fd).isFile()) throw new Error(`PGLITE_DIR ${dir} holds a hearken.lock that is not a file; remove it or choose another PGLITE_DIR`)
    const buffer = Buffer.alloc(32)
    return Number(buffer.toString("utf8", 0, fs.readSync(fd, buffer, 0, buffer.length, 0)))
  } finally {
    fs.closeSync(fd)
  }
}

/** PGlite opens a directory that another process holds without complaint, so we lock it ourselves. */
const acquireLock = () => {
  makeDirectory(dir)
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(lockFile, String(process.pid), { flag: "wx" })
      return
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
      const holder = lockHolder()
      if (Number.isInteger(holder) && holder > 0 && isAlive(holder)) {
        throw new Error(`PGLITE_DIR ${dir} is in use by process ${holder}; stop it or choose another PGLITE_DIR`)
      }
      fs.rmSync(lockFile, { force: true })
    }
  }
  throw new Error(`could not lock PGLITE_DIR ${dir}`)
}

let locked = false

const releaseLock = () => {
  if (!locked) return
  try {
    if (lockHolder() === process.pid) fs.rmSync(lockFile)
  } catch {
    // already gone
  }
}

/**
 * Until PGlite serves, there is nothing to close: going away (the parent gone, or `SIGTERM`)
 * releases the lock and exits. Registered before anything else, so that a parent that dies
 * during start-up (even killed) leaves no child behind.
 */
let stop: () => void | Promise<void> = () => {
  releaseLock()
  process.exit(0)
}
const onStop = () => void stop()
process.on("disconnect", onStop)
process.on("SIGTERM", onStop)
process.on("SIGINT", onStop)

const main = async () => {
  if (!inMemory) {
    acquireLock()
    locked = true
  }
  // Loaded once the directory is known to be usable: a bad PGLITE_DIR is told at once, not after PGlite loads.
  const [{ PGlite }, { pg_trgm }, { vector }, { PGLiteSocketServer }] = await Promise.all([
    import("@electric-sql/pglite"),
    import("@electric-sql/pglite/contrib/pg_trgm"),
    import("@electric-sql/pglite-pgvector"),
    import("@electric-sql/pglite-socket")
  ])
  const db = await PGlite.create({
    ...(inMemory ? {} : { dataDir: dir }),
    extensions: { vector, pg_trgm }
  })
  const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0, maxConnections: 1 })
  await server.start()
  const port = Number(server.getServerConn().split(":").pop())
  let stopping = false
  stop = async () => {
    if (stopping) return
    stopping = true
    await server.stop().catch(() => undefined)
    await db.close().catch(() => undefined)
    releaseLock()
    process.exit(0)
  }
  // The parent went away while PGlite started: nobody will read the port.
  if (!process.connected) return void stop()
  send({ port })
}

main().catch((error: unknown) => {
  releaseLock()
  send({ error: error instanceof Error ? error.message : String(error) })
  process.exit(1)
})
