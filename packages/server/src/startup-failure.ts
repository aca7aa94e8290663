import { Cause, Effect } from "effect"

const oneLine = (cause: Cause.Cause<unknown>): string | undefined => {
  const error = Cause.squash(cause)
  if (error !== null && typeof error === "object" && "_tag" in error) {
    switch (error._tag) {
      case "InvalidConfig":
      case "FixtureError":
      case "EmbeddedDatabaseError":
        return String((error as unknown as { message: unknown }).message)
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
