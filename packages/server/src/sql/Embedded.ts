import { Data, Effect } from "effect"
import { type ChildProcess, fork } from "node:child_process"
import { fileURLToPath } from "node:url"
import { makeDirectory } from "./makeDirectory.js"

export class EmbeddedDatabaseError extends Data.TaggedError("EmbeddedDatabaseError")<{ readonly message: string }> {}

const isRunning = (child: ChildProcess) => child.exitCode === null && child.signalCode === null

/**
 * Ends the child: `SIGTERM` (it closes the database and releases its lock), and `SIGKILL` if it
 * has not exited `graceMs` later (a child stuck in start-up never runs its handler). Resumes
 * once it has exited.
 */
const stopChild = (child: ChildProcess, graceMs: number) =>
  Effect.callback<void>((resume) => {
    if (!isRunning(child)) return resume(Effect.void)
    const kill = setTimeout(() => child.kill("SIGKILL"), graceMs)
    child.once("exit", () => {
      clearTimeout(kill)
      resume(Effect.void)
    })
    child.kill("SIGTERM")
  })

/**
 * Starts the embedded PGlite process for `dir` and yields the loopback port it
 * serves on. The process is stopped (and its lock released) with the scope,
 * and with this process whichever way it ends: interrupted during start-up
 * (`SIGTERM` while PGlite starts), exiting, or killed (the child watches its
 * IPC channel).
 */
export const startEmbedded = (dir: string) =>
  Effect.try({
    // Before the child starts (and loads PGlite): a directory that cannot be made is told at once.
    try: () => dir === "memory" ? undefined : makeDirectory(dir),
    catch: (error) => new EmbeddedDatabaseError({ message: error instanceof Error ? error.message : String(error) })
  }).pipe(Effect.andThen(Effect.acquireRelease(
    Effect.callback<{ readonly child: ChildProcess; readonly port: number }, EmbeddedDatabaseError>((resume) => {
      const child = fork(fileURLToPath(new URL("./pglite-process.js", import.meta.url)), [], {
        env: { ...process.env, PGLITE_DIR: dir },
        // The server's heap flags (npm start) are for its own heap; PGlite's memory is WebAssembly's.
        execArgv: [],
        stdio: ["ignore", "inherit", "inherit", "ipc"]
      })
      // An exit that skips the scope (process.exit) still takes the child along.
      const killOnExit = () => child.kill("SIGKILL")
      process.once("exit", killOnExit)
      child.once("exit", () => process.removeListener("exit", killOnExit))
      child.once("message", (message: { port?: number; error?: string }) => {
        if (typeof message.port === "number") resume(Effect.succeed({ child, port: message.port }))
        else resume(Effect.fail(new EmbeddedDatabaseError({ message: message.error ?? "embedded database failed" })))
      })
      child.once("exit", (code) =>
        resume(Effect.fail(new EmbeddedDatabaseError({ message: `embedded database exited with code ${code}` })))
      )
      // Interrupted before it answered (SIGTERM during start-up): nothing to close yet.
      return stopChild(child, 2000)
    }),
    ({ child }) => stopChild(child, 10_000),
    // Start-up may be interrupted: a SIGTERM meanwhile must not wait for a child that may never answer.
    { interruptible: true }
  )), Effect.map(({ port }) => port))
