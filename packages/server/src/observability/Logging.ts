import { Cause, Context, Effect, Exit, Layer, Logger, References, Tracer } from "effect"
import { ObservabilityConfig } from "../config/observability.js"

const text = (message: unknown): unknown => {
  const parts = Array.isArray(message) ? message : [message]
  return parts.length === 1 ? parts[0] : parts
}

/** `JSON.stringify`, but never throwing (cycles, bigints): a log line must always be written. */
const line = (entry: Record<string, unknown>) => {
  try {
    return JSON.stringify(entry, (_, value) => typeof value === "bigint" ? value.toString() : value)
  } catch {
    return JSON.stringify({ ...entry, message: String(entry["message"]), annotations: undefined })
  }
}

/**
 * One JSON object per line on stdout: `timestamp`, `level`, `message`, the
 * `traceId` and `spanId` of the current span when spans are exported (the
 * native tracer's ids lead nowhere), `annotations`, and `cause` when there is one.
 */
export const jsonLogger = Logger.make(({ cause, date, fiber, logLevel, message }) => {
  const span = fiber.getRef(Tracer.Tracer) === Tracer.nativeTracer
    ? undefined
    : Context.getOrUndefined(fiber.context, Tracer.ParentSpan)
  const annotations = fiber.getRef(References.CurrentLogAnnotations)
  process.stdout.write(`${line({
    timestamp: date.toISOString(),
    level: logLevel.toUpperCase(),
    message: text(message),
    ...(span === undefined ? {} : { traceId: span.traceId, spanId: span.spanId }),
    ...(Object.keys(annotations).length === 0 ? {} : { annotations }),
    ...(cause.reasons.length === 0 ? {} : { cause: Cause.pretty(cause) })
  })}\n`)
})

/** `LOG_FORMAT=json` replaces the text logger; text stays the default, for a terminal. */
export const layer = Layer.unwrap(Effect.gen(function*() {
  const config = yield* ObservabilityConfig
  return config.logFormat === "json" ? Logger.layer([jsonLogger, Logger.tracerLogger]) : Layer.empty
}))

/** `LOG_LEVEL`. */
export const minimumLevel = Layer.unwrap(Effect.gen(function*() {
  const config = yield* ObservabilityConfig
  return Layer.succeed(References.MinimumLogLevel, config.logLevel)
}))

/** The configured level and format, for the lines a process logs outside its application's layers (`logStopped`). */
export const settings = Layer.mergeAll(minimumLevel, layer)

/**
 * The last line of a process that was stopped (SIGTERM, SIGINT), logged once its layers are
 * released: the HTTP drain, the background work (webhook attempts finishing), the database and
 * Redis connections, the trace exporter's last flush. Until it, the process may still be busy.
 * Needs `settings` around it. A failure says nothing here: it has its own line.
 */
export const logStopped = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  self.pipe(Effect.onExit((exit) =>
    Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)
      ? Effect.logInfo("Stopped: every task ended and every connection closed")
      : Effect.void
  ))
