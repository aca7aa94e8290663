import { Config, ConfigProvider, Context, Effect, Layer, type LogLevel, Option, Redacted, Schema, SchemaIssue, SchemaTransformation } from "effect"
import { isIP } from "node:net"
import { fixtureFileProblem } from "./fixtures/FixtureFile.js"
import { printableUrl } from "./redaction.js"

/** Start-up refuses a bad environment variable with this error, naming it. */
export class InvalidConfig extends Schema.TaggedError<InvalidConfig>()("InvalidConfig", {
  variable: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `Invalid configuration: ${this.variable} ${this.reason}`
  }
}

// What a value may be. Each schema's checks carry, as their `message`, what the variable must be;
// `invalidConfig` below adds the variable's name and the value given.

/** A number written with `pattern`'s digits, from `minimum` to `maximum`; either failing reads `message`. */
const digits = (pattern: RegExp) => (minimum: number, maximum: number, message: string) =>
  Schema.String.check(Schema.isPattern(pattern, { message })).pipe(
    Schema.decodeTo(Schema.Number.check(Schema.isBetween({ minimum, maximum }, { message })), SchemaTransformation.numberFromString)
  )

/** Digits only, as Hearken has always read them (Effect's own number decoding would also take `+80`, `1e3` and `80.0`). */
const Integer = digits(/^\d+$/)

const Decimal = digits(/^\d+(\.\d+)?$/)

const Milliseconds = (maximum: number, message = `a number of milliseconds between 1 and ${maximum}`) => Integer(1, maximum, message)

/** 0 to 65535: PORT=0 picks a free port, and `Config.Port` refuses 0. */
const Port = Integer(0, 65535, "a port number between 0 and 65535")

/**
 * The variables whose value is a URL. A URL may carry credentials, so none of these is ever
 * printed whole: a refused one is shown through `printableUrl`, and their user info is removed
 * from any start-up line (`startup-failure.ts`).
 */
export const urlVariables = [
  "DATABASE_URL",
  "DATABASE_DIRECT_URL",
  "DATABASE_READ_URL",
  "REDIS_URL",
  "EMBEDDINGS_URL",
  "PUBLIC_URL",
  "DASHBOARD_ORIGIN",
  "OTEL_EXPORTER_OTLP_ENDPOINT"
] as const

/** A DNS name: labels of letters, digits, `-` and `_` (as container and service names have), dot-separated, an optional final dot. */
const dnsName = /^(?=[^.].{0,252}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/i

/**
 * One host as a parsed URL holds it: a DNS name, an IPv4 address, or an IPv6 address in brackets.
 * (`https://a.com,https://b.com` parses with the host `a.com,https`, and `redis://a,b:6379` with
 * `a,b`: a list written as one value is refused here, not read as a wrong host.)
 */
export const isOneHost = (hostname: string): boolean => {
  const bracketed = /^\[(.*)\]$/.exec(hostname)
  if (bracketed !== null) return isIP(bracketed[1]!) === 6
  if (/^[0-9.]+$/.test(hostname)) return isIP(hostname) === 4
  return dnsName.test(hostname)
}

/** What a URL's host must be, in words: added to a URL variable's `message` (`UrlString`). */
const oneHostWords = "with one host: a DNS name, an IPv4 address or an IPv6 address in brackets (not a list, no spaces or commas)"

/**
 * A URL with one of `protocols` and one host (`isOneHost`), kept as written (a secret's stays a
 * string). `message` is for a value that is no such URL, `hostMessage` for one whose host is not
 * one host. `socketHost`: a percent-encoded socket directory is a host too (`postgres://%2Frun%2Fpostgresql/db`).
 */
const UrlString = (protocols: ReadonlyArray<string>, message: string, options: {
  readonly hostMessage?: string
  readonly socketHost?: boolean
} = {}) =>
  Schema.String.check(Schema.makeFilter((value) => {
    if (!URL.canParse(value)) return message
    const url = new URL(value)
    if (!protocols.includes(url.protocol) || url.hostname === "") return message
    if (isOneHost(url.hostname) || (options.socketHost === true && /^%2F[^,\s]*$/i.test(url.hostname))) return undefined
    return options.hostMessage ?? `${message} ${oneHostWords}`
  }))

const HttpUrl = (message: string, hostMessage?: string) =>
  UrlString(["http:", "https:"], message, hostMessage === undefined ? {} : { hostMessage }).pipe(
    Schema.decodeTo(Schema.URL, SchemaTransformation.urlFromString)
  )

/** What `Origin` refuses, in words: a start-up line names the variable and the value after it. */
const originWords = "an http(s) origin: scheme, host and optional port, one origin (not a list), " +
  "without a path, query, fragment or user name (e.g. https://feedback.example.com)"

/**
 * One origin: scheme, host and port, nothing after them but an optional `/`.
 * (`https://a.com,https://b.com` parses as a URL whose host is `a.com,https`:
 * a list written as one value is refused, not read as a wrong origin.) User
 * info, a path, a query or a fragment mean nothing in an origin: refused
 * (issue 29), where they were once dropped. `message` is for a value that is
 * no http(s) URL at all.
 */
const Origin = (message: string) =>
  HttpUrl(message, originWords).check(Schema.makeFilter((url) => url.href === url.origin || url.href === `${url.origin}/`, {
    message: originWords
  }))

/** No query and no fragment: where a path is appended (`/v1/traces`, `/embeddings`), they would be sent or lost. */
const withoutQuery = (message: string) =>
  Schema.URL.check(Schema.makeFilter((url) => url.search === "" && url.hash === "", { message }))

/**
 * An address to listen on: an IP address (IPv6 with or without brackets) or a host name, with
 * no scheme, port or path (`HOST`, `METRICS_HOST`).
 */
const ListenAddress = Schema.String.check(Schema.makeFilter((value) =>
  isIP(value.replace(/^\[(.*)\]$/, "$1")) !== 0 || /^[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?$/i.test(value), {
  message: "an IP address or host name to listen on, such as 0.0.0.0, ::, 127.0.0.1 or localhost (no scheme, port or path)"
})).pipe(Schema.decodeTo(Schema.String, SchemaTransformation.transform({
  decode: (value) => value.replace(/^\[(.*)\]$/, "$1"),
  encode: (value) => value
})))

/** A name or key that goes into a header or a JSON field as it is: no spaces, no control characters. */
const Token = (message: string) => Schema.String.check(Schema.isPattern(/^[\x21-\x7e\u00a0-\uffff]+$/, { message }))

/** No `user:password@`: where credentials go elsewhere (`fetch` refuses a URL holding them). */
const withoutUserInfo = (message: string) =>
  Schema.URL.check(Schema.makeFilter((url) => url.username === "" && url.password === "", { message }))

/**
 * A service's base URL that Hearken appends a path to and sends requests to: http(s), no
 * credentials in it (they go where `credentials` says), no query or fragment (`base` is an
 * example of what is meant).
 */
const ServiceUrl = (credentials: string, base: string) =>
  HttpUrl("an http(s) URL").pipe(
    Schema.decodeTo(withoutUserInfo(`a URL without a user name or password (${credentials})`)),
    Schema.decodeTo(withoutQuery(`an http(s) URL without a query or fragment (${base})`))
  )

/** One of `words`, in any case, read in lower case (the `Literals` check refuses any other). */
const Word = <const W extends string>(words: ReadonlyArray<W>, message: string) =>
  Schema.String.pipe(Schema.decodeTo(
    Schema.Literals(words).annotate({ message }),
    SchemaTransformation.transform({ decode: (value) => value.toLowerCase() as W, encode: (word) => word })
  ))

/**
 * A domain name such as example.com, lower-cased and without leading or trailing dots. (Effect's
 * `Schema.DomainNameFromString` keeps a trailing dot and refuses all-numeric names; this did not.)
 */
const DomainName = Schema.String.pipe(Schema.decodeTo(
  Schema.String.check(Schema.isPattern(
    /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/,
    { message: "a domain name such as example.com" }
  )),
  SchemaTransformation.transform({ decode: (value) => value.toLowerCase().replace(/^\.+|\.+$/g, ""), encode: (name) => name })
))

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

/**
 * CSP `frame-ancestors` sources, separated by spaces: `*`, `'self'`, `'none'`
 * (alone), a scheme (`https:`) or a host (`https://*.example.com`,
 * `shop.example:8443`). A comma or a semicolon is refused: a list written as
 * `a.com,b.com` would silently be one source, or start a second directive.
 */
const frameSource = /^(\*|'self'|[a-z][a-z0-9+.-]*:|([a-z][a-z0-9+.-]*:\/\/)?(\*\.)?[a-z0-9-]+(\.[a-z0-9-]+)*(:(\d{1,5}|\*))?)$/i
const FrameAncestors = Schema.String.check(Schema.makeFilter((value) => {
  const sources = value.trim().split(/\s+/)
  return sources.join(" ") === "'none'" || sources.every((source) => frameSource.test(source))
}, { message: "CSP frame-ancestors sources separated by spaces, e.g. * or https://shop.example https://*.shop.example, or 'none'" })).pipe(
  Schema.decodeTo(Schema.String, SchemaTransformation.transform({ decode: (value) => value.trim().split(/\s+/).join(" "), encode: (value) => value }))
)

// Redis topologies (issue 30, decision 0036): `REDIS_URL`, or Sentinel, or Cluster; `rate-limit/RedisClient.ts`.

export interface HostPort {
  readonly host: string
  readonly port: number
}

const hostPortWords = "host:port pairs separated by commas, e.g. 10.0.0.1:26379,10.0.0.2:26379 ([::1]:26379 for IPv6)"

/** `host:port` with a host name, an IPv4 address or a bracketed IPv6 address, and a port from 1 to 65535. */
const hostPort = (entry: string): HostPort | undefined => {
  const match = /^(\[([0-9a-f:.]+)\]|[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?):(\d{1,5})$/i.exec(entry)
  if (match === null) return undefined
  const host = match[2] ?? match[1]!
  const port = Number(match[4])
  if (port < 1 || port > 65535 || (match[2] !== undefined && isIP(host) !== 6)) return undefined
  return { host, port }
}

/** A list of `host:port` (`REDIS_SENTINELS`, `REDIS_CLUSTER_NODES`): one bad entry refuses the whole value. */
const HostPorts = Schema.String.pipe(Schema.decodeTo(
  Schema.Array(Schema.Struct({ host: Schema.String, port: Schema.Number })),
  SchemaTransformation.transformEffect({
    decode: (value) => {
      const entries = value.split(",").map((entry) => entry.trim()).filter((entry) => entry !== "")
      const parsed = entries.map(hostPort)
      return parsed.length === 0 || parsed.some((entry) => entry === undefined)
        ? Effect.fail(new SchemaIssue.InvalidValue({ message: hostPortWords }))
        : Effect.succeed(parsed as ReadonlyArray<HostPort>)
    },
    encode: (list) =>
      Effect.succeed(list.map(({ host, port }) => `${isIP(host) === 6 ? `[${host}]` : host}:${port}`).join(","))
  })
))

const Password = Schema.String.check(Schema.isPattern(/^[^\x00-\x1f\x7f]+$/, { message: "a password without control characters" }))

/** The variables as read; `redisTopology` checks how they combine. */
const redisSettings = Config.all({
  url: Config.option(Config.schema(
    Schema.RedactedFromValue(UrlString(["redis:", "rediss:"], "a redis:// or rediss:// URL")),
    "REDIS_URL"
  )),
  sentinels: Config.option(Config.schema(HostPorts, "REDIS_SENTINELS")),
  sentinelName: Config.option(Config.schema(
    Token("the master group's name as the sentinels know it (sentinel monitor NAME …), without spaces or control characters"),
    "REDIS_SENTINEL_NAME"
  )),
  clusterNodes: Config.option(Config.schema(HostPorts, "REDIS_CLUSTER_NODES")),
  /** `AUTH` on the data nodes of a Sentinel group or a Cluster (a `REDIS_URL` carries its own). */
  password: Config.option(Config.schema(Schema.RedactedFromValue(Password), "REDIS_PASSWORD")),
  /** `AUTH` on the sentinels themselves (their `requirepass`), when they have one. */
  sentinelPassword: Config.option(Config.schema(Schema.RedactedFromValue(Password), "REDIS_SENTINEL_PASSWORD"))
})

/** Where the rate limiter's Redis is: none (the in-process limiter), one server, a Sentinel group or a Cluster. */
export type RedisTopology =
  | { readonly _tag: "Standalone"; readonly url: Redacted.Redacted<string> }
  | {
    readonly _tag: "Sentinel"
    readonly sentinels: ReadonlyArray<HostPort>
    readonly name: string
    readonly password: Option.Option<Redacted.Redacted<string>>
    readonly sentinelPassword: Option.Option<Redacted.Redacted<string>>
  }
  | { readonly _tag: "Cluster"; readonly nodes: ReadonlyArray<HostPort>; readonly password: Option.Option<Redacted.Redacted<string>> }

const topologyWords = "one of REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES"

/**
 * Combinations that cannot mean anything are refused, naming the variable that is too many:
 * two topologies at once, sentinels without the master's name, a name without sentinels.
 */
const redisTopology = (
  settings: Config.Success<typeof redisSettings>
): Effect.Effect<Option.Option<RedisTopology>, InvalidConfig> => {
  const { url, sentinels, sentinelName, clusterNodes, password, sentinelPassword } = settings
  if (Option.isSome(clusterNodes) && (Option.isSome(url) || Option.isSome(sentinels))) {
    const other = Option.isSome(url) ? "REDIS_URL" : "REDIS_SENTINELS"
    return Effect.fail(new InvalidConfig({ variable: "REDIS_CLUSTER_NODES", reason: `must not be set with ${other} (${topologyWords})` }))
  }
  if (Option.isSome(sentinels) && Option.isSome(url)) {
    return Effect.fail(new InvalidConfig({ variable: "REDIS_SENTINELS", reason: `must not be set with REDIS_URL (${topologyWords})` }))
  }
  if (Option.isSome(sentinels) && Option.isNone(sentinelName)) {
    return Effect.fail(new InvalidConfig({ variable: "REDIS_SENTINEL_NAME", reason: "must be set with REDIS_SENTINELS: the master group's name" }))
  }
  if (Option.isNone(sentinels) && Option.isSome(sentinelName)) {
    return Effect.fail(new InvalidConfig({ variable: "REDIS_SENTINEL_NAME", reason: "must be set only with REDIS_SENTINELS" }))
  }
  if (Option.isSome(password) && Option.isNone(sentinels) && Option.isNone(clusterNodes)) {
    return Effect.fail(new InvalidConfig({
      variable: "REDIS_PASSWORD",
      reason: "must be set only with REDIS_SENTINELS or REDIS_CLUSTER_NODES (REDIS_URL carries its own: redis://:PASSWORD@host)"
    }))
  }
  if (Option.isSome(sentinelPassword) && Option.isNone(sentinels)) {
    return Effect.fail(new InvalidConfig({ variable: "REDIS_SENTINEL_PASSWORD", reason: "must be set only with REDIS_SENTINELS" }))
  }
  if (Option.isSome(sentinels) && Option.isSome(sentinelName)) {
    return Effect.succeed(Option.some<RedisTopology>({
      _tag: "Sentinel",
      sentinels: sentinels.value,
      name: sentinelName.value,
      password,
      sentinelPassword
    }))
  }
  if (Option.isSome(clusterNodes)) {
    return Effect.succeed(Option.some<RedisTopology>({ _tag: "Cluster", nodes: clusterNodes.value, password }))
  }
  return Effect.succeed(Option.map(url, (url): RedisTopology => ({ _tag: "Standalone", url })))
}

const uriDecoded = (text: string) => {
  try {
    return decodeURIComponent(text)
  } catch {
    return undefined
  }
}

const logLevels = {
  all: "All", trace: "Trace", debug: "Debug", info: "Info", warn: "Warn", warning: "Warn",
  error: "Error", fatal: "Fatal", none: "None"
} as const satisfies Record<string, LogLevel.LogLevel>

const flag = (name: string, fallback: boolean) =>
  Config.schema(Word(["true", "1", "yes", "false", "0", "no"], "true or false"), name).pipe(
    Config.map((word) => word === "true" || word === "1" || word === "yes"),
    Config.withDefault(fallback)
  )

// The variables, in the order they are checked (docs/configuration.md).

const embeddings = Config.all({
  url: Config.option(Config.schema(
    ServiceUrl("give the key as EMBEDDINGS_API_KEY", "the API's base, e.g. https://api.openai.com/v1"),
    "EMBEDDINGS_URL"
  )),
  model: Config.schema(Token("a model name without spaces or control characters"), "EMBEDDINGS_MODEL").pipe(
    Config.withDefault("text-embedding-3-small")
  ),
  dimensions: Config.schema(Integer(1, 16000, "an integer between 1 and 16000"), "EMBEDDINGS_DIMENSIONS").pipe(Config.withDefault(1536)),
  apiKey: Config.option(Config.schema(
    Schema.RedactedFromValue(Token("the key alone, without \"Bearer\", spaces or control characters")),
    "EMBEDDINGS_API_KEY"
  ))
}).pipe(Config.map(({ url, ...embeddings }) => Option.map(url, (url) => ({ url, ...embeddings }))))

const timeouts = Config.all({
  /** Longest a statement may run on PostgreSQL before it is cancelled (not enforced by PGlite). */
  databaseStatementTimeoutMs: Config.schema(
    Milliseconds(3_600_000, "a number of milliseconds between 1 and 3600000"),
    "DATABASE_STATEMENT_TIMEOUT_MS"
  ).pipe(Config.withDefault(5000)),
  embeddingsTimeoutMs: Config.schema(Milliseconds(600_000), "EMBEDDINGS_TIMEOUT_MS").pipe(Config.withDefault(1500))
}).pipe(Config.flatMap((timeouts) => {
  // The stall timer also runs while a request is handled (nothing moves on its socket then): it must
  // outlast what one request may wait on, or a slow request would lose its answer.
  const handlingMs = timeouts.databaseStatementTimeoutMs + timeouts.embeddingsTimeoutMs
  return Config.all({
    /** `HTTP_STALL_TIMEOUT_MS`: a connection on which nothing moves, either way, for this long is closed. */
    httpStallTimeoutMs: Config.schema(
      Integer(
        Math.max(1000, handlingMs + 1),
        600_000,
        `a number of milliseconds of at least 1000, more than DATABASE_STATEMENT_TIMEOUT_MS + EMBEDDINGS_TIMEOUT_MS (${handlingMs}), and at most 600000`
      ),
      "HTTP_STALL_TIMEOUT_MS"
    ).pipe(Config.withDefault(Math.max(60_000, handlingMs + 1))),
    /** Longest a suggestion's statements may run: at most `databaseStatementTimeoutMs`, which bounds every statement. */
    suggestionsStatementTimeoutMs: Config.schema(
      Milliseconds(
        timeouts.databaseStatementTimeoutMs,
        `a number of milliseconds between 1 and DATABASE_STATEMENT_TIMEOUT_MS (${timeouts.databaseStatementTimeoutMs})`
      ),
      "SUGGESTIONS_STATEMENT_TIMEOUT_MS"
    ).pipe(Config.withDefault(Math.min(1000, timeouts.databaseStatementTimeoutMs)))
  }).pipe(Config.map((bounded) => ({ ...timeouts, ...bounded })))
}))

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
const tracing = Config.all({
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

const serverConfig = Config.all({
  port: Config.schema(Port, "PORT").pipe(Config.withDefault(3000)),
  host: Config.schema(ListenAddress, "HOST").pipe(Config.withDefault("0.0.0.0")),
  embeddings,
  timeouts,
  databaseUrl: Config.option(Config.schema(
    Schema.RedactedFromValue(UrlString(["postgres:", "postgresql:"], "a postgres:// or postgresql:// URL", { socketHost: true })),
    "DATABASE_URL"
  )),
  // PostgreSQL behind a pooler (issue 30; docs/operations.md: "Behind PgBouncer").
  /**
   * `transaction` when `DATABASE_URL` is a transaction-mode pooler (PgBouncer's `pool_mode =
   * transaction`; the default when `DATABASE_DIRECT_URL` is set, else `session`): no startup parameters, no named prepared statements, the statement timeout
   * enforced per statement (`sql/Database.ts`), and no `LISTEN` there.
   */
  databasePoolMode: Config.option(Config.schema(Word(["session", "transaction"], "session or transaction"), "DATABASE_POOL_MODE")),
  /** A direct connection (a session of its own) for what a transaction-mode pooler cannot carry: migrations, `LISTEN`, index builds. */
  databaseDirectUrl: Config.option(Config.schema(
    Schema.RedactedFromValue(UrlString(["postgres:", "postgresql:"], "a postgres:// or postgresql:// URL")),
    "DATABASE_DIRECT_URL"
  )),
  /**
   * A streaming replica of `DATABASE_URL` for the reads that need not see their own writes:
   * `/boards`, `/updates` and suggestions (`sql/ReadReplica.ts`). Reached as `DATABASE_URL` is
   * (`DATABASE_POOL_MODE` says what both are).
   */
  databaseReadUrl: Config.option(Config.schema(
    Schema.RedactedFromValue(UrlString(["postgres:", "postgresql:"], "a postgres:// or postgresql:// URL", { socketHost: true })),
    "DATABASE_READ_URL"
  )),
  /** A directory, or `memory`. */
  pgliteDir: Config.String("PGLITE_DIR").pipe(Config.withDefault(".data/pglite")),
  redis: redisSettings,
  seedFile: Config.option(Config.schema(Schema.String.check(Schema.makeFilter(fixtureFileProblem)), "SEED_FILE")),
  /** The API's own origin (CORS, the OpenAPI `servers` entry): Hearken serves from `/`, so a path would be a lie. */
  publicUrl: Config.option(Config.schema(Origin("an http(s) URL"), "PUBLIC_URL")),
  dashboardOrigin: Config.option(Config.schema(Origin(originWords), "DASHBOARD_ORIGIN")).pipe(
    Config.map(Option.map((url) => url.origin))
  ),
  rootDomain: Config.option(Config.schema(DomainName, "ROOT_DOMAIN")),
  /** Who may frame the widget's page `/widget/frame` (its CSP's `frame-ancestors`); any site by default. */
  widgetFrameAncestors: Config.schema(FrameAncestors, "WIDGET_FRAME_ANCESTORS").pipe(Config.withDefault("*")),
  trustProxy: Config.schema(Integer(0, 32, "an integer between 0 and 32"), "TRUST_PROXY").pipe(Config.withDefault(0)),
  /** Open sockets per client address (`http/ConnectionCap.ts`); 0 is no cap. Unset: 256, or 0 behind a proxy (`TRUST_PROXY`). */
  maxConnectionsPerAddress: Config.option(
    Config.schema(Integer(0, 1_000_000, "an integer between 0 and 1000000 (0: no cap)"), "MAX_CONNECTIONS_PER_ADDRESS")
  ),
  /** Limit on one background call (up to 32 posts): a model on a CPU needs far longer than for one draft. */
  embeddingsBackfillTimeoutMs: Config.schema(Milliseconds(3_600_000), "EMBEDDINGS_BACKFILL_TIMEOUT_MS").pipe(Config.withDefault(120_000)),
  /** A post whose embedding failed n times is tried again `base × 2^(n−1)` later, at most an hour. */
  embeddingsRetryBaseMs: Config.schema(Milliseconds(3_600_000), "EMBEDDINGS_RETRY_BASE_MS").pipe(Config.withDefault(10_000)),
  suggestionsMaxDistance: Config.schema(Decimal(0, 2, "a number between 0 and 2"), "SUGGESTIONS_MAX_DISTANCE").pipe(Config.withDefault(1)),
  webhookMaxAttempts: Config.schema(Integer(1, 100, "an integer between 1 and 100"), "WEBHOOK_MAX_ATTEMPTS").pipe(Config.withDefault(8)),
  webhookRetryBaseMs: Config.schema(Milliseconds(86_400_000), "WEBHOOK_RETRY_BASE_MS").pipe(Config.withDefault(5000)),
  webhookTimeoutMs: Config.schema(Milliseconds(600_000), "WEBHOOK_TIMEOUT_MS").pipe(Config.withDefault(10_000)),
  webhookWorker: flag("WEBHOOK_WORKER", true),
  webhookAllowPrivateUrls: flag("WEBHOOK_ALLOW_PRIVATE_URLS", false),
  rateLimitMultiplier: Config.schema(Decimal(1, 1_000_000, "a number between 1 and 1000000"), "RATE_LIMIT_MULTIPLIER").pipe(
    Config.withDefault(1)
  ),
  logLevel: Config.schema(
    Word(Object.keys(logLevels) as Array<keyof typeof logLevels>, "one of trace, debug, info, warn, error, fatal, none"),
    "LOG_LEVEL"
  ).pipe(Config.map((word): LogLevel.LogLevel => logLevels[word]), Config.withDefault("Info")),
  tracing,
  /** `LOG_FORMAT`: `text` for a terminal (the default), `json` for one object per line. */
  logFormat: Config.schema(Word(["text", "json"], "text or json"), "LOG_FORMAT").pipe(Config.withDefault("text")),
  // Metrics (decision 0014): `observability/Metrics.ts`, `Gauges.ts`, and the listener in `MetricsServer.ts`.
  /** `METRICS_PORT`: serve Prometheus metrics there; unset, no listener. */
  metricsPort: Config.option(Config.schema(Port, "METRICS_PORT")),
  metricsHost: Config.option(Config.schema(ListenAddress, "METRICS_HOST"))
}).pipe(Config.map(({ databasePoolMode, timeouts, publicUrl, metricsHost, maxConnectionsPerAddress, ...config }) => ({
  ...config,
  ...timeouts,
  // A direct URL of its own says that `DATABASE_URL` is a transaction-mode pooler (CONTRACT.md), unless told otherwise.
  databasePoolMode: Option.getOrElse(databasePoolMode, () => Option.isSome(config.databaseDirectUrl) ? "transaction" as const : "session" as const),
  // Behind a proxy every socket is the proxy's: a cap per address would be a cap on the whole service.
  maxConnectionsPerAddress: Option.getOrElse(maxConnectionsPerAddress, () => config.trustProxy === 0 ? 256 : 0),
  publicUrl: Option.getOrElse(publicUrl, () => new URL(`http://localhost:${config.port}`)),
  /** `PUBLIC_URL` as given, none when unset: the OpenAPI document's `servers` (`docs/page.ts`, decision 0035). */
  publicUrlGiven: publicUrl,
  /** `METRICS_HOST`: the metrics listener's address (default: `HOST`). */
  metricsHost: Option.getOrElse(metricsHost, () => config.host)
})))

export interface ServerConfigShape extends Readonly<Omit<Config.Success<typeof serverConfig>, "redis">> {
  /** The rate limiter's Redis: none, `REDIS_URL`, `REDIS_SENTINELS` or `REDIS_CLUSTER_NODES` (`redisTopology`). */
  readonly redis: Option.Option<RedisTopology>
}

export interface TracingConfig extends Option.Option.Value<ServerConfigShape["tracing"]> {}

/** Hearken's rule: an empty or blank value means unset (Effect's `fromEnv` drops only an empty one). */
const blankIsUnset = (provider: ConfigProvider.ConfigProvider) =>
  ConfigProvider.make((path) =>
    Effect.map(provider.load(path), (node) =>
      node?.value === undefined || node.value.trim() !== ""
        ? node
        : node._tag === "Value"
        ? undefined
        : { ...node, value: undefined })
  )

/** A variable that decodes to a `Redacted` (`Config.Redacted`, `Schema.RedactedFromValue`) is a secret: its value is never printed. */
const isSecret = (issue: SchemaIssue.Issue): boolean => {
  const representation = "ast" in issue ? issue.ast.annotations?.representation as { readonly id?: unknown } | undefined : undefined
  return representation?.id === "effect/schema/Redacted" || ("issue" in issue && isSecret(issue.issue))
}

/**
 * The one place a `ConfigError` becomes the start-up line, e.g. `Invalid configuration: PORT must be
 * a port number between 0 and 65535, got "abc"`: the variable is where the error points, the words
 * the failed check's `message`, and the value as given follows unless it is a secret.
 */
const invalidConfig = Effect.fnUntraced(function*(
  error: Config.ConfigError,
  provider: ConfigProvider.ConfigProvider
): Effect.fn.Return<never, InvalidConfig | Config.ConfigError> {
  if (!Schema.isSchemaError(error.cause)) return yield* Effect.fail(error)
  const issue = error.cause.issue
  // `Config.schema` points a failure at the variable's path: one name here.
  const variable = issue._tag === "Pointer" ? issue.path.join("_") : "(unknown)"
  const expected = SchemaIssue.makeFormatterStandardSchemaV1()(issue).issues[0]?.message
  const given = yield* provider.load([variable]).pipe(Effect.map((node) => node?.value), Effect.orElseSucceed(() => undefined))
  const shown = given === undefined || isSecret(issue)
    ? undefined
    : !(urlVariables as ReadonlyArray<string>).includes(variable)
    ? given
    : printableUrl(given)
  return yield* new InvalidConfig({
    variable,
    reason: shown === undefined ? `must be ${expected}` : `must be ${expected}, got ${JSON.stringify(shown)}`
  })
})

/** An address that takes every interface: it shares a port with any other address of the host. */
const isWildcard = (host: string) => ["", "0.0.0.0", "::", "[::]"].includes(host)

/**
 * Refused before anything listens: the public and the metrics listener cannot share a port on one
 * address (whichever started first, the other would fail and seem to blame its own variables).
 */
const checkMetricsPort = (config: ServerConfigShape) =>
  Option.isSome(config.metricsPort) && config.metricsPort.value !== 0 && config.metricsPort.value === config.port &&
    (config.metricsHost === config.host || isWildcard(config.metricsHost) || isWildcard(config.host))
    ? Effect.fail(new InvalidConfig({ variable: "METRICS_PORT", reason: `must differ from PORT (${config.port}) on the same host` }))
    : Effect.succeed(config)

export const loadServerConfig: Effect.Effect<ServerConfigShape, InvalidConfig | Config.ConfigError> = Effect.gen(
  function*() {
    const provider = blankIsUnset(yield* ConfigProvider.ConfigProvider)
    const { redis, ...config } = yield* serverConfig.parse(provider).pipe(Effect.catch((error) => invalidConfig(error, provider)))
    return yield* checkMetricsPort({ ...config, redis: yield* redisTopology(redis) })
  }
)

/** The one typed view of the environment (docs/configuration.md). */
export class ServerConfig extends Context.Service<ServerConfig, ServerConfigShape>()("hearken/ServerConfig") {
  static readonly layer = Layer.effect(ServerConfig, loadServerConfig)
}

/**
 * Every variable the configuration reads, from the definition itself: it is parsed once over an
 * empty environment (every variable is read then, whatever the others say), and the names it asks
 * for are collected. docs/configuration.md is checked against this list (test/configuration-doc.test.ts).
 */
export const configVariables: Effect.Effect<ReadonlyArray<string>> = Effect.suspend(() => {
  const read = new Set<string>()
  const recording = ConfigProvider.make((path) => {
    read.add(path.join("_"))
    return Effect.succeed(undefined)
  })
  return serverConfig.parse(recording).pipe(Effect.orDie, Effect.map(() => [...read]))
})
