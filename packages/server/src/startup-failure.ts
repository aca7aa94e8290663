import { Cause, Effect, Exit, Runtime } from "effect"

const oneLine = (cause: Cause.Cause<unknown>): string | undefined => {
  const error = Cause.squash(cause)
  if (error !== null && typeof error === "object" && "_tag" in error) {
    switch (error._tag) {
      case "InvalidConfig":
      case "FixtureError":
      case "EmbeddedDatabaseError":
        return String((error as unknown as { message: unknown }).message)
      case "ServeError": {
        const reason = (error as { cause?: { code?: string; message?: string } }).cause
        return `cannot listen: ${reason?.code === "EADDRINUSE" ? "the address is in use (check PORT and HOST)" : reason?.message ?? "unknown error"}`
      }
      case "SqlError":
        return "Cannot reach or use the database: check DATABASE_URL and that the server allows the vector and pg_trgm extensions"
    }
  }
  return undefined
}

/** A start-up that cannot proceed prints one line (never a secret or a stack) and exits 1. */
export const reportStartupFailure = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  self.pipe(
    Effect.catchCause((cause) => {
      if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
      const line = oneLine(cause)
      return Effect.sync(() => {
        process.stderr.write(`hearken: ${line ?? "start-up failed"}\n`)
        if (line === undefined) process.stderr.write(`${Cause.pretty(cause)}\n`)
        process.exit(1)
      })
    })
  )

/** SIGTERM/SIGINT interrupt the server; once it has drained, that is a clean exit (0), not 130. */
export const teardown: Runtime.Teardown = (exit, onExit) =>
  Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)
