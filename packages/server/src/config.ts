import { Config, Context, Effect, Layer, LogLevel, Option, Redacted, Schema } from "effect"

/** Start-up refuses a bad environment variable with this error, naming it. */
export class InvalidConfig extends Schema.TaggedError<InvalidConfig>()("InvalidConfig", {
  variable: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `Invalid configuration: ${this.variable} ${this.reason}`
  }
}

export interface ServerConfigShape {
  readonly port: number
  readonly host: string
  /** `HTTP_STALL_TIMEOUT_MS`: a connection on which nothing moves, either way, for this long is closed. */
  readonly httpStallTimeoutMs: number
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  /** A directory, or `memory`. */
  readonly pgliteDir: string
  /** Longest a statement may run on PostgreSQL before it is cancelled (not enforced by PGlite). */
  readonly databaseStatementTimeoutMs: number
  readonly redisUrl: Option.Option<Redacted.Redacted<string>>
  readonly seedFile: Option.Option<string>
  readonly publicUrl: URL
  readonly dashboardOrigin: Option.Option<string>
  readonly rootDomain: Option.Option<string>
  readonly trustProxy: number
  readonly embeddings: Option.Option<{
    readonly url: URL
    readonly model: string
    readonly dimensions: number
    readonly apiKey: Option.Option<Redacted.Redacted<string>>
  }>
  readonly embeddingsTimeoutMs: number
  /** Limit on one background call (up to 32 posts): a model on a CPU needs far longer than for one draft. */
  readonly embeddingsBackfillTimeoutMs: number
  /** A post whose embedding failed n times is tried again `base × 2^(n−1)` later, at most an hour. */
  readonly embeddingsRetryBaseMs: number
  readonly suggestionsMaxDistance: number
  /** Longest a suggestion's statements may run (at most `databaseStatementTimeoutMs`). */
  readonly suggestionsStatementTimeoutMs: number
  readonly webhookMaxAttempts: number
  readonly webhookRetryBaseMs: number
  readonly webhookTimeoutMs: number
  readonly webhookWorker: boolean
  readonly webhookAllowPrivateUrls: boolean
  readonly rateLimitMultiplier: number
  readonly logLevel: LogLevel.LogLevel

  // Metrics (decision 0014): `observability/Metrics.ts`, `Gauges.ts`, and the listener in `MetricsServer.ts`.
  /** `METRICS_PORT`: serve Prometheus metrics there; unset, no listener. */
  readonly metricsPort: Option.Option<number>
  /** `METRICS_HOST`: the metrics listener's address (default: `HOST`). */
  readonly metricsHost: string

  // Traces and logs (decision 0013): `observability/Tracing.ts`, `observability/Logging.ts`.
  /** OTLP/HTTP trace export, on only when `OTEL_EXPORTER_OTLP_ENDPOINT` is set. */
  readonly tracing: Option.Option<TracingConfig>
  /** `LOG_FORMAT`: `text` for a terminal (the default), `json` for one object per line. */
  readonly logFormat: "text" | "json"
}

export interface TracingConfig {
  /** Where spans are POSTed: `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`. */
  readonly url: URL
  /** `OTEL_EXPORTER_OTLP_PROTOCOL`: `http/protobuf` (the OpenTelemetry default) or `http/json`. */
  readonly protocol: "http/protobuf" | "http/json"
  readonly serviceName: string
  /** `OTEL_RESOURCE_ATTRIBUTES`, `key=value` pairs. */
  readonly resourceAttributes: Record<string, string>
  /** `OTEL_EXPORTER_OTLP_HEADERS`, often a collector's API key. */
  readonly headers: Redacted.Redacted<Record<string, string>>
  /** `OTEL_BSP_SCHEDULE_DELAY`: how often spans are sent (sooner when a full batch waits). */
  readonly exportIntervalMs: number
  /** `OTEL_EXPORTER_OTLP_TIMEOUT`: longest one export request may take before its spans are dropped. */
  readonly exportTimeoutMs: number
  /** `OTEL_BSP_MAX_QUEUE_SIZE`: most ended spans held for export; beyond it new spans are dropped. */
  readonly maxQueueSize: number
  /** `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`: most spans in one export request (at most `maxQueueSize`). */
  readonly maxExportBatchSize: number
}

/** Reads one variable as a raw string; unset and empty both mean "absent". */
const raw = (name: string) =>
  Config.option(Config.String(name)).pipe(
    Config.map(Option.filter((value) => value.trim() !== ""))
  )

type Parser<A> = (value: string) => A | undefined

const parse = <A>(name: string, value: string, parser: Parser<A>, expected: string, secret = false) => {
  const parsed = parser(value)
  return parsed === undefined
    ? Effect.fail(new InvalidConfig({ variable: name, reason: secret ? `must be ${expected}` : `must be ${expected}, got ${JSON.stringify(value)}` }))
    : Effect.succeed(parsed)
}

const variable = Effect.fnUntraced(function*<A>(name: string, parser: Parser<A>, expected: string, fallback: A, secret = false) {
  const value = yield* raw(name)
  return Option.isNone(value) ? fallback : yield* parse(name, value.value, parser, expected, secret)
})

const optionalVariable = Effect.fnUntraced(function*<A>(name: string, parser: Parser<A>, expected: string, secret = false) {
  const value = yield* raw(name)
  return Option.isNone(value)
    ? Option.none<A>()
    : Option.some(yield* parse(name, value.value, parser, expected, secret))
})

const integer = (min: number, max: number): Parser<number> => (value) => {
  if (!/^\d+$/.test(value)) return undefined
  const n = Number(value)
  return n >= min && n <= max ? n : undefined
}

const decimal = (min: number, max: number): Parser<number> => (value) => {
  if (!/^\d+(\.\d+)?$/.test(value)) return undefined
  const n = Number(value)
  return n >= min && n <= max ? n : undefined
}

const boolean: Parser<boolean> = (value) => {
  const v = value.toLowerCase()
  return ["true", "1", "yes"].includes(v) ? true : ["false", "0", "no"].includes(v) ? false : undefined
}

const url = (protocols: ReadonlyArray<string>): Parser<URL> => (value) => {
  if (!URL.canParse(value)) return undefined
  const parsed = new URL(value)
  return protocols.includes(parsed.protocol) && parsed.hostname !== "" ? parsed : undefined
}

const secretUrl = (protocols: ReadonlyArray<string>): Parser<Redacted.Redacted<string>> => (value) =>
  url(protocols)(value) === undefined ? undefined : Redacted.make(value)

const origin: Parser<string> = (value) => {
  const parsed = url(["http:", "https:"])(value)
  return parsed === undefined ? undefined : parsed.origin
}

const hostname: Parser<string> = (value) => {
  const v = value.toLowerCase().replace(/^\.+|\.+$/g, "")
  return /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/.test(v)
    ? v
    : undefined
}

const logLevels: Record<string, LogLevel.LogLevel> = {
  all: "All", trace: "Trace", debug: "Debug", info: "Info", warn: "Warn", warning: "Warn",
  error: "Error", fatal: "Fatal", none: "None"
}

const anyString: Parser<string> = (value) => value

/** OpenTelemetry's `key=value,key2=value2` lists (resource attributes, headers), values percent-encoded. */
const keyValues: Parser<Record<string, string>> = (value) => {
  const out: Record<string, string> = {}
  for (const pair of value.split(",")) {
    if (pair.trim() === "") continue
    const equals = pair.indexOf("=")
    if (equals <= 0) return undefined
    try {
      out[decodeURIComponent(pair.slice(0, equals).trim())] = decodeURIComponent(pair.slice(equals + 1).trim())
    } catch {
      return undefined
    }
  }
  return out
}

const loadTracing = Effect.gen(function*() {
  const endpoint = yield* optionalVariable("OTEL_EXPORTER_OTLP_ENDPOINT", url(["http:", "https:"]), "an http(s) URL")
  if (Option.isNone(endpoint)) return Option.none<TracingConfig>()
  const traces = new URL(endpoint.value)
  traces.pathname = `${traces.pathname.replace(/\/+$/, "")}/v1/traces`
  const resourceAttributes = yield* variable("OTEL_RESOURCE_ATTRIBUTES", keyValues, "key=value pairs separated by commas", {})
  // OpenTelemetry's defaults for the batch span processor: 2048 queued, 512 a batch, 10 s a request.
  const maxQueueSize = yield* variable("OTEL_BSP_MAX_QUEUE_SIZE", integer(1, 1_000_000), "an integer between 1 and 1000000", 2048)
  const maxExportBatchSize = yield* variable(
    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
    integer(1, maxQueueSize),
    `an integer between 1 and OTEL_BSP_MAX_QUEUE_SIZE (${maxQueueSize})`,
    Math.min(512, maxQueueSize)
  )
  return Option.some<TracingConfig>({
    url: traces,
    protocol: yield* variable(
      "OTEL_EXPORTER_OTLP_PROTOCOL",
      (v): TracingConfig["protocol"] | undefined => v === "http/protobuf" || v === "http/json" ? v : undefined,
      "http/protobuf or http/json",
      "http/protobuf"
    ),
    serviceName: yield* variable("OTEL_SERVICE_NAME", anyString, "a service name", resourceAttributes["service.name"] ?? "hearken"),
    resourceAttributes,
    headers: Redacted.make(
      yield* variable("OTEL_EXPORTER_OTLP_HEADERS", keyValues, "key=value pairs separated by commas", {}, true)
    ),
    exportIntervalMs: yield* variable("OTEL_BSP_SCHEDULE_DELAY", integer(1, 3_600_000), "a number of milliseconds", 5000),
    exportTimeoutMs: yield* variable("OTEL_EXPORTER_OTLP_TIMEOUT", integer(1, 600_000), "a number of milliseconds between 1 and 600000", 10_000),
    maxQueueSize,
    maxExportBatchSize
  })
})

export const loadServerConfig: Effect.Effect<ServerConfigShape, InvalidConfig | Config.ConfigError> = Effect.gen(
  function*() {
    const port = yield* variable("PORT", integer(0, 65535), "a port number between 0 and 65535", 3000)
    const host = yield* variable("HOST", anyString, "a host name or address", "0.0.0.0")
    const embeddingsUrl = yield* optionalVariable("EMBEDDINGS_URL", url(["http:", "https:"]), "an http(s) URL")
    const embeddingsModel = yield* variable("EMBEDDINGS_MODEL", anyString, "a model name", "text-embedding-3-small")
    const embeddingsDimensions = yield* variable("EMBEDDINGS_DIMENSIONS", integer(1, 16000), "an integer between 1 and 16000", 1536)
    const embeddingsApiKey = yield* optionalVariable("EMBEDDINGS_API_KEY", (v) => Redacted.make(v), "a key", true)
    const databaseStatementTimeoutMs = yield* variable(
      "DATABASE_STATEMENT_TIMEOUT_MS",
      integer(1, 3_600_000),
      "a number of milliseconds between 1 and 3600000",
      5000
    )
    const embeddingsTimeoutMs = yield* variable("EMBEDDINGS_TIMEOUT_MS", integer(1, 600_000), "a number of milliseconds", 1500)
    // The stall timer also runs while a request is handled (nothing moves on its socket then): it must
    // outlast what one request may wait on, or a slow request would lose its answer.
    const handlingMs = databaseStatementTimeoutMs + embeddingsTimeoutMs
    return {
      port,
      host,
      httpStallTimeoutMs: yield* variable(
        "HTTP_STALL_TIMEOUT_MS",
        integer(Math.max(1000, handlingMs + 1), 600_000),
        `a number of milliseconds of at least 1000, more than DATABASE_STATEMENT_TIMEOUT_MS + EMBEDDINGS_TIMEOUT_MS (${handlingMs}), and at most 600000`,
        Math.max(60_000, handlingMs + 1)
      ),
      databaseUrl: yield* optionalVariable(
        "DATABASE_URL",
        secretUrl(["postgres:", "postgresql:"]),
        "a postgres:// or postgresql:// URL",
        true
      ),
      pgliteDir: yield* variable("PGLITE_DIR", anyString, "a directory or `memory`", ".data/pglite"),
      databaseStatementTimeoutMs,
      redisUrl: yield* optionalVariable("REDIS_URL", secretUrl(["redis:", "rediss:"]), "a redis:// or rediss:// URL", true),
      seedFile: yield* optionalVariable("SEED_FILE", anyString, "a file path"),
      publicUrl: yield* variable("PUBLIC_URL", url(["http:", "https:"]), "an http(s) URL", new URL(`http://localhost:${port}`)),
      dashboardOrigin: yield* optionalVariable("DASHBOARD_ORIGIN", origin, "an http(s) origin"),
      rootDomain: yield* optionalVariable("ROOT_DOMAIN", hostname, "a domain name such as example.com"),
      trustProxy: yield* variable("TRUST_PROXY", integer(0, 32), "an integer between 0 and 32", 0),
      embeddings: Option.map(embeddingsUrl, (url) => ({
        url,
        model: embeddingsModel,
        dimensions: embeddingsDimensions,
        apiKey: embeddingsApiKey
      })),
      embeddingsTimeoutMs,
      embeddingsBackfillTimeoutMs: yield* variable("EMBEDDINGS_BACKFILL_TIMEOUT_MS", integer(1, 3_600_000), "a number of milliseconds", 120_000),
      embeddingsRetryBaseMs: yield* variable("EMBEDDINGS_RETRY_BASE_MS", integer(1, 3_600_000), "a number of milliseconds", 10_000),
      suggestionsMaxDistance: yield* variable("SUGGESTIONS_MAX_DISTANCE", decimal(0, 2), "a number between 0 and 2", 1),
      suggestionsStatementTimeoutMs: yield* variable(
        "SUGGESTIONS_STATEMENT_TIMEOUT_MS",
        integer(1, 3_600_000),
        "a number of milliseconds between 1 and 3600000",
        1000
      ),
      webhookMaxAttempts: yield* variable("WEBHOOK_MAX_ATTEMPTS", integer(1, 100), "an integer between 1 and 100", 8),
      webhookRetryBaseMs: yield* variable("WEBHOOK_RETRY_BASE_MS", integer(1, 86_400_000), "a number of milliseconds", 5000),
      webhookTimeoutMs: yield* variable("WEBHOOK_TIMEOUT_MS", integer(1, 600_000), "a number of milliseconds", 10_000),
      webhookWorker: yield* variable("WEBHOOK_WORKER", boolean, "true or false", true),
      webhookAllowPrivateUrls: yield* variable("WEBHOOK_ALLOW_PRIVATE_URLS", boolean, "true or false", false),
      rateLimitMultiplier: yield* variable("RATE_LIMIT_MULTIPLIER", decimal(1, 1_000_000), "a number between 1 and 1000000", 1),
      logLevel: yield* variable("LOG_LEVEL", (v) => logLevels[v.toLowerCase()], "one of trace, debug, info, warn, error, fatal, none", "Info" as LogLevel.LogLevel),

      // Traces and logs (decision 0013).
      tracing: yield* loadTracing,
      logFormat: yield* variable(
        "LOG_FORMAT",
        (v): "text" | "json" | undefined => v.toLowerCase() === "json" ? "json" : v.toLowerCase() === "text" ? "text" : undefined,
        "text or json",
        "text"
      ),

      // Metrics (decision 0014).
      metricsPort: yield* optionalVariable("METRICS_PORT", integer(0, 65535), "a port number between 0 and 65535"),
      metricsHost: yield* variable("METRICS_HOST", anyString, "a host name or address", host)
    }
  }
)

/** The one typed view of the environment (README: "Configuration"). */
export class ServerConfig extends Context.Service<ServerConfig, ServerConfigShape>()("hearken/ServerConfig") {
  static readonly layer = Layer.effect(ServerConfig, loadServerConfig)
}
