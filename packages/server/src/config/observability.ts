import { Config, Context, Effect, type LogLevel, Option, Redacted, Schema, SchemaIssue, SchemaTransformation } from "effect"
import { Integer, ListenAddress, Milliseconds, Port, ServiceUrl, Word } from "./schemas.js"

// Logs, traces (decision 0013) and metrics (decision 0014): `observability/`.

const uriDecoded = (text: string) => {
  try {
    return decodeURIComponent(text)
  } catch {
    return undefined
  }
}

/**
 * OpenTelemetry's `key=value,key2=value2` lists (resource attributes, headers), values
 * percent-encoded. (`Config.Record` skips a pair without `=` and does not decode; this refuses it.)
 */
const KeyValues = Schema.String.pipe(Schema.decodeTo(
  Schema.Record(Schema.String, Schema.String),
  SchemaTransformation.transformEffect({
    decode: (value) => {
      const out: Record<string, string> = {}
      for (const pair of value.split(",")) {
        if (pair.trim() === "") continue
        const equals = pair.indexOf("=")
        const key = equals > 0 ? uriDecoded(pair.slice(0, equals).trim()) : undefined
        const decoded = equals > 0 ? uriDecoded(pair.slice(equals + 1).trim()) : undefined
        if (key === undefined || decoded === undefined) {
          return Effect.fail(new SchemaIssue.InvalidValue({ message: "key=value pairs separated by commas" }))
        }
        out[key] = decoded
      }
      return Effect.succeed(out)
    },
    encode: (record) =>
      Effect.succeed(Object.entries(record).map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join(","))
  })
))

const logLevels = {
  all: "All", trace: "Trace", debug: "Debug", info: "Info", warn: "Warn", warning: "Warn",
  error: "Error", fatal: "Fatal", none: "None"
} as const satisfies Record<string, LogLevel.LogLevel>

const tracesUrl = (endpoint: URL) => {
  const url = new URL(endpoint)
  url.pathname = `${url.pathname.replace(/\/+$/, "")}/v1/traces`
  return url
}

/**
 * Traces and logs (decision 0013): `observability/Tracing.ts`, `observability/Logging.ts`. Read
 * and checked whether or not `OTEL_EXPORTER_OTLP_ENDPOINT` is set: a bad value is refused even
 * before it would matter.
 */
const tracingSettings =
  Config.all({
    /** `OTEL_RESOURCE_ATTRIBUTES`, `key=value` pairs. */
    resourceAttributes: Config.schema(KeyValues, "OTEL_RESOURCE_ATTRIBUTES").pipe(Config.withDefault<typeof KeyValues.Type>({})),
    // OpenTelemetry's defaults for the batch span processor: 2048 queued, 512 a batch, 10 s a request.
    /** `OTEL_BSP_MAX_QUEUE_SIZE`: most ended spans held for export; beyond it new spans are dropped. */
    maxQueueSize: Config.schema(Integer(1, 1_000_000, "an integer between 1 and 1000000"), "OTEL_BSP_MAX_QUEUE_SIZE").pipe(
      Config.withDefault(2048)
    )
  }).pipe(Config.flatMap(({ resourceAttributes, maxQueueSize }) =>
    Config.all({
      /** `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`: most spans in one export request (at most `maxQueueSize`). */
      maxExportBatchSize: Config.schema(
        Integer(1, maxQueueSize, `an integer between 1 and OTEL_BSP_MAX_QUEUE_SIZE (${maxQueueSize})`),
        "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"
      ).pipe(Config.withDefault(Math.min(512, maxQueueSize))),
      /** `OTEL_EXPORTER_OTLP_PROTOCOL`: `http/protobuf` (the OpenTelemetry default) or `http/json`. */
      protocol: Config.schema(
        Schema.Literals(["http/protobuf", "http/json"]).annotate({ message: "http/protobuf or http/json" }),
        "OTEL_EXPORTER_OTLP_PROTOCOL"
      ).pipe(Config.withDefault("http/protobuf")),
      serviceName: Config.schema(
        Schema.String.check(Schema.isPattern(/^[^\x00-\x1f\x7f]+$/, { message: "a name without control characters" })),
        "OTEL_SERVICE_NAME"
      ).pipe(Config.withDefault(resourceAttributes["service.name"] ?? "hearken")),
      /** `OTEL_EXPORTER_OTLP_HEADERS`, often a collector's API key. */
      headers: Config.schema(Schema.RedactedFromValue(KeyValues), "OTEL_EXPORTER_OTLP_HEADERS").pipe(
        Config.withDefault(Redacted.make<typeof KeyValues.Type>({}))
      ),
      /** `OTEL_BSP_SCHEDULE_DELAY`: how often spans are sent (sooner when a full batch waits). */
      exportIntervalMs: Config.schema(Milliseconds(3_600_000), "OTEL_BSP_SCHEDULE_DELAY").pipe(Config.withDefault(5000)),
      /** `OTEL_EXPORTER_OTLP_TIMEOUT`: longest one export request may take before its spans are dropped. */
      exportTimeoutMs: Config.schema(
        Milliseconds(600_000, "a number of milliseconds between 1 and 600000"),
        "OTEL_EXPORTER_OTLP_TIMEOUT"
      ).pipe(Config.withDefault(10_000))
    }).pipe(Config.map((rest) => ({ resourceAttributes, maxQueueSize, ...rest })))
  ))

/** OTLP/HTTP trace export, on only when `OTEL_EXPORTER_OTLP_ENDPOINT` is set. */
export const tracing = Config.all({
  endpoint: Config.option(Config.schema(
    ServiceUrl("give credentials as OTEL_EXPORTER_OTLP_HEADERS", "/v1/traces is appended to its path"),
    "OTEL_EXPORTER_OTLP_ENDPOINT"
  )),
  settings: tracingSettings
}).pipe(Config.map(({ endpoint, settings }) =>
  Option.map(endpoint, (endpoint) => ({
    /** Where spans are POSTed: `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`. */
    url: tracesUrl(endpoint),
    ...settings
  }))
))

export const logLevel = Config.schema(
  Word(Object.keys(logLevels) as Array<keyof typeof logLevels>, "one of trace, debug, info, warn, error, fatal, none"),
  "LOG_LEVEL"
).pipe(Config.map((word): LogLevel.LogLevel => logLevels[word]), Config.withDefault("Info"))

/** `LOG_FORMAT`: `text` for a terminal (the default), `json` for one object per line. */
export const logFormat = Config.schema(Word(["text", "json"], "text or json"), "LOG_FORMAT").pipe(Config.withDefault("text"))

// Metrics (decision 0014): `observability/Metrics.ts`, `Gauges.ts`, and the listener in `MetricsServer.ts`.
/** `METRICS_PORT`: serve Prometheus metrics there; unset, no listener. */
export const metricsPort = Config.option(Config.schema(Port, "METRICS_PORT"))

export const metricsHost = Config.option(Config.schema(ListenAddress, "METRICS_HOST"))

/** The trace exporter's settings, when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (`observability/Tracing.ts`). */
export interface TracingConfig extends Option.Option.Value<Config.Success<typeof tracing>> {}

/** Logs, traces and metrics: `observability/`, and the request log's detail (`http/Edge.ts`). */
export interface ObservabilityConfigShape {
  readonly logLevel: LogLevel.LogLevel
  readonly logFormat: "text" | "json"
  readonly tracing: Option.Option<TracingConfig>
  readonly metricsPort: Option.Option<number>
  /** `METRICS_HOST`: the metrics listener's address (default: `HOST`). */
  readonly metricsHost: string
}

export class ObservabilityConfig
  extends Context.Service<ObservabilityConfig, ObservabilityConfigShape>()("hearken/ObservabilityConfig")
{}
