import { Cause, Effect, Exit, Runtime } from "effect"
import { urlVariables } from "./config/InvalidConfig.js"
import { percentDecoded, redactText, urlSecrets } from "./config/redaction.js"

interface Failure {
  readonly _tag?: unknown
  readonly message?: unknown
  readonly code?: unknown
  readonly reason?: unknown
  readonly cause?: unknown
  readonly errors?: unknown
}

const asFailure = (value: unknown): Failure | undefined =>
  value !== null && typeof value === "object" ? value as Failure : undefined

/** One error's own words: its message, or its code (Node's AggregateError of a refused connection has no message). */
const ownWords = (error: Failure): string | undefined => {
  if (typeof error.message === "string" && error.message !== "") return error.message
  if (typeof error.code === "string") return error.code
  const first = Array.isArray(error.errors) ? asFailure(error.errors[0]) : undefined
  return first === undefined ? undefined : ownWords(first)
}

/**
 * What went wrong at the bottom of a chain of wrappers (a `SqlError`'s
 * reason, a `MigrationError`'s cause, …): `connect ECONNREFUSED 127.0.0.1:1`,
 * `database "x" does not exist`.
 */
const rootCause = (error: Failure): string | undefined => {
  let current = error
  let words = ownWords(error)
  for (let depth = 0; depth < 8; depth++) {
    const next = asFailure(current.reason) ?? asFailure(current.cause)
    if (next === undefined || next === current) break
    current = next
    words = ownWords(current) ?? words
  }
  return words
}

const isConnectionFailure = (error: Failure): boolean => {
  for (let current: Failure | undefined = error, depth = 0; current !== undefined && depth < 8; depth++) {
    const tag = String(current._tag ?? "")
    // 3D000: the database named in the URL does not exist.
    if (tag === "ConnectionError" || tag === "AuthenticationError" || current.code === "3D000") return true
    current = asFailure(current.reason) ?? asFailure(current.cause)
  }
  return false
}

const database = (error: Failure, detail: string | undefined) => {
  const what = detail === undefined ? "" : ` (${detail})`
  // A transaction-mode pooler (PgBouncer) refuses the startup parameter (docs/operations.md: "Behind PgBouncer").
  if (detail?.includes("unsupported startup parameter") === true) {
    return `Cannot reach or use the database${what}: DATABASE_URL looks like a pooler in transaction mode; set DATABASE_POOL_MODE=transaction`
  }
  return isConnectionFailure(error)
    ? `Cannot reach or use the database${what}: check DATABASE_URL`
    : `Cannot reach or use the database${what}: check DATABASE_URL and that the server allows the vector and pg_trgm extensions`
}

const describe = (error: Failure): string => {
  switch (error._tag) {
    case "InvalidConfig":
    case "FixtureError":
      return String(error.message)
    case "EmbeddedDatabaseError": {
      const message = String(error.message)
      return message.includes("PGLITE_DIR") ? message : `the embedded database did not start (${message}): check PGLITE_DIR`
    }
    case "ServeError": {
      const reason = asFailure(error.cause)
      return reason?.code === "EADDRINUSE"
        ? "cannot listen: the address is in use (check PORT and HOST)"
        : `cannot listen: ${reason === undefined ? "unknown error" : ownWords(reason) ?? "unknown error"} (check PORT and HOST)`
    }
    case "SqlError":
      return database(error, rootCause(error))
    case "MigrationError": {
      const detail = rootCause(asFailure(error.cause) ?? {})
      return isConnectionFailure(error)
        ? database(error, detail)
        : `Cannot migrate the database: ${String(error.message)}${detail === undefined ? "" : `: ${detail}`}`
    }
    default:
      return `start-up failed: ${rootCause(error) ?? String(error._tag ?? "unknown error")}`
  }
}

/**
 * The values that must never be printed: the user info and password of every URL-valued
 * variable (as written and decoded, whether the URL parses or not), `EMBEDDINGS_API_KEY` and
 * the values of `OTEL_EXPORTER_OTLP_HEADERS`.
 */
const secretsIn = (env: Record<string, string | undefined>): Array<string> => {
  const out = urlVariables.flatMap((name) => urlSecrets(env[name] ?? ""))
  const key = env["EMBEDDINGS_API_KEY"]?.trim()
  if (key) out.push(key)
  for (const pair of (env["OTEL_EXPORTER_OTLP_HEADERS"] ?? "").split(",")) {
    const value = pair.slice(pair.indexOf("=") + 1).trim()
    if (pair.includes("=") && value !== "") out.push(value, percentDecoded(value))
  }
  return out
}

/** Drops any `user:password@` of a URL, and every secret of `env`, from `text`. */
export const redact = (text: string, env: Record<string, string | undefined>) => redactText(text, secretsIn(env))

/**
 * The one line a failed start-up prints (without the `hearken: ` prefix): it
 * names what to fix, and holds no secret, no stack and no line break.
 */
export const startupFailureLine = (cause: Cause.Cause<unknown>, env: Record<string, string | undefined> = process.env) => {
  const squashed = Cause.squash(cause)
  const error = asFailure(squashed) ?? { message: typeof squashed === "string" ? squashed : undefined }
  const line = redact(describe(error), env).replace(/\s*[\r\n]+\s*/g, " ").trim()
  return line.length > 500 ? `${line.slice(0, 497)}...` : line
}

const verbose = (env: Record<string, string | undefined>) =>
  ["trace", "debug", "all"].includes((env["LOG_LEVEL"] ?? "").toLowerCase())

/**
 * A start-up that cannot proceed prints one line and exits 1. With
 * `LOG_LEVEL=debug` (or trace) the whole cause follows, secrets removed, for
 * whoever needs the stack.
 */
export const reportStartupFailure = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  self.pipe(
    Effect.catchCause((cause) => {
      if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
      return Effect.sync(() => {
        process.stderr.write(`hearken: ${startupFailureLine(cause)}\n`)
        if (verbose(process.env)) process.stderr.write(`${redact(Cause.pretty(cause), process.env)}\n`)
        process.exit(1)
      })
    })
  )

/** SIGTERM/SIGINT interrupt the server; once it has drained, that is a clean exit (0), not 130. */
export const teardown: Runtime.Teardown = (exit, onExit) =>
  Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)
