import { Data, Effect } from "effect"
import { fork } from "node:child_process"
import { fileURLToPath } from "node:url"

export class EmbeddedDatabaseError extends Data.TaggedError("EmbeddedDatabaseError")<{ readonly message: string }> {}

/**
 * Starts the embedded PGlite process for `dir` and yields the loopback port it
 * serves on. The process is stopped (and its lock released) with the scope.
 */
export const startEmbedded = (dir: string) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly port: number; readonly stop: () => void }, EmbeddedDatabaseError>((resume) => {
      const child = fork(fileURLToPath(new URL("./pglite-process.js", import.meta.url)), [], {
        env: { ...process.env, PGLITE_DIR: dir },
        // The server's heap flags (npm start) are for its own heap; PGlite's memory is WebAssembly's.
        execArgv: [],
        stdio: ["ignore", "inherit", "inherit", "ipc"]
      })
      const stop = () => {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM")
      }
      child.once("message", (message: { port?: number; error?: string }) => {
        if (typeof message.port === "number") resume(Effect.succeed({ port: message.port, stop }))
        else resume(Effect.fail(new EmbeddedDatabaseError({ message: message.error ?? "embedded database failed" })))
      })
      child.once("exit", (code) =>
        resume(Effect.fail(new EmbeddedDatabaseError({ message: `embedded database exited with code ${code}` })))
      )
      return Effect.sync(stop)
    }),
    ({ stop }) => Effect.sync(stop)
  ).pipe(Effect.map(({ port }) => port))
