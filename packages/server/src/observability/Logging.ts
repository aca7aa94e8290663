import { Cause, Context, Effect, Layer, Logger, References, Tracer } from "effect"
import { ServerConfig } from "../config.js"

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
  const config = yield* ServerConfig
  return config.logFormat === "json" ? Logger.layer([jsonLogger, Logger.tracerLogger]) : Layer.empty
}))
