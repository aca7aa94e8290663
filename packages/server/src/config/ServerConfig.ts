import { Config, ConfigProvider, Effect, Layer, Option } from "effect"
import * as Database from "./database.js"
import { DatabaseConfig } from "./database.js"
import * as Embeddings from "./embeddings.js"
import { EmbeddingsConfig } from "./embeddings.js"
import * as Http from "./http.js"
import { HttpConfig } from "./http.js"
import { blankIsUnset, InvalidConfig, invalidConfig } from "./InvalidConfig.js"
import * as Observability from "./observability.js"
import { ObservabilityConfig } from "./observability.js"
import * as RateLimits from "./rateLimits.js"
import { RateLimitConfig, type RedisTopology } from "./rateLimits.js"
import * as Webhooks from "./webhooks.js"
import { WebhookConfig } from "./webhooks.js"

/**
 * The environment, read and checked at once at start-up (docs/configuration.md), then handed out
 * in slices, one per area: `HttpConfig`, `DatabaseConfig`, `RateLimitConfig`, `WebhookConfig`,
 * `EmbeddingsConfig`, `ObservabilityConfig`. Each layer reads the slice it needs; a bad variable is
 * still refused before anything starts, with the one line it always had.
 */

/** Limits that bound one another, each read once the ones it depends on are known. */
const timeouts = Config.all({
  databaseStatementTimeoutMs: Database.databaseStatementTimeoutMs,
  embeddingsTimeoutMs: Embeddings.embeddingsTimeoutMs
}).pipe(Config.flatMap((timeouts) =>
  Config.all({
    httpStallTimeoutMs: Http.httpStallTimeoutMs(timeouts.databaseStatementTimeoutMs + timeouts.embeddingsTimeoutMs),
    suggestionsStatementTimeoutMs: Database.suggestionsStatementTimeoutMs(timeouts.databaseStatementTimeoutMs)
  }).pipe(Config.map((bounded) => ({ ...timeouts, ...bounded })))
))

// The variables, in the order they are checked (docs/configuration.md): the first bad one is the one told.
const serverConfig = Config.all({
  port: Http.port,
  host: Http.host,
  embeddings: Embeddings.embeddings,
  timeouts,
  databaseUrl: Database.databaseUrl,
  databasePoolMode: Database.databasePoolMode,
  databaseDirectUrl: Database.databaseDirectUrl,
  databaseReadUrl: Database.databaseReadUrl,
  pgliteDir: Database.pgliteDir,
  redis: RateLimits.redisSettings,
  seedFile: Database.seedFile,
  publicUrl: Http.publicUrl,
  dashboardOrigin: Http.dashboardOrigin,
  rootDomain: Http.rootDomain,
  widgetFrameAncestors: Http.widgetFrameAncestors,
  trustProxy: Http.trustProxy,
  maxConnectionsPerAddress: Http.maxConnectionsPerAddress,
  embeddingsBackfillTimeoutMs: Embeddings.embeddingsBackfillTimeoutMs,
  embeddingsRetryBaseMs: Embeddings.embeddingsRetryBaseMs,
  suggestionsMaxDistance: Embeddings.suggestionsMaxDistance,
  webhookMaxAttempts: Webhooks.webhookMaxAttempts,
  webhookRetryBaseMs: Webhooks.webhookRetryBaseMs,
  webhookTimeoutMs: Webhooks.webhookTimeoutMs,
  webhookWorker: Webhooks.webhookWorker,
  webhookAllowPrivateUrls: Webhooks.webhookAllowPrivateUrls,
  rateLimitMultiplier: RateLimits.rateLimitMultiplier,
  logLevel: Observability.logLevel,
  tracing: Observability.tracing,
  logFormat: Observability.logFormat,
  metricsPort: Observability.metricsPort,
  metricsHost: Observability.metricsHost
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

/** Every variable's value, as read and checked: what the slices are cut from (and what tests inspect). */
export interface ServerConfigShape extends Readonly<Omit<Config.Success<typeof serverConfig>, "redis">> {
  /** The rate limiter's Redis: none, `REDIS_URL`, `REDIS_SENTINELS` or `REDIS_CLUSTER_NODES` (`redisTopology`). */
  readonly redis: Option.Option<RedisTopology>
}

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
    return yield* checkMetricsPort({ ...config, redis: yield* RateLimits.redisTopology(redis) })
  }
)

/** Every slice: what a layer that needs the whole configuration (the server, a worker) requires. */
export type ServerConfig = HttpConfig | DatabaseConfig | RateLimitConfig | WebhookConfig | EmbeddingsConfig | ObservabilityConfig

/** The slices of one checked configuration. */
export const layerOf = (config: ServerConfigShape): Layer.Layer<ServerConfig> =>
  Layer.mergeAll(
    Layer.succeed(HttpConfig, {
      port: config.port,
      host: config.host,
      publicUrl: config.publicUrl,
      publicUrlGiven: config.publicUrlGiven,
      dashboardOrigin: config.dashboardOrigin,
      rootDomain: config.rootDomain,
      widgetFrameAncestors: config.widgetFrameAncestors,
      trustProxy: config.trustProxy,
      maxConnectionsPerAddress: config.maxConnectionsPerAddress,
      httpStallTimeoutMs: config.httpStallTimeoutMs,
      ...Http.serverLimits
    }),
    Layer.succeed(DatabaseConfig, {
      databaseUrl: config.databaseUrl,
      databasePoolMode: config.databasePoolMode,
      databaseDirectUrl: config.databaseDirectUrl,
      databaseReadUrl: config.databaseReadUrl,
      pgliteDir: config.pgliteDir,
      databaseStatementTimeoutMs: config.databaseStatementTimeoutMs,
      suggestionsStatementTimeoutMs: config.suggestionsStatementTimeoutMs,
      seedFile: config.seedFile
    }),
    Layer.succeed(RateLimitConfig, { redis: config.redis, rateLimitMultiplier: config.rateLimitMultiplier }),
    Layer.succeed(WebhookConfig, {
      webhookMaxAttempts: config.webhookMaxAttempts,
      webhookRetryBaseMs: config.webhookRetryBaseMs,
      webhookTimeoutMs: config.webhookTimeoutMs,
      webhookWorker: config.webhookWorker,
      webhookAllowPrivateUrls: config.webhookAllowPrivateUrls
    }),
    Layer.succeed(EmbeddingsConfig, {
      embeddings: config.embeddings,
      embeddingsTimeoutMs: config.embeddingsTimeoutMs,
      embeddingsBackfillTimeoutMs: config.embeddingsBackfillTimeoutMs,
      embeddingsRetryBaseMs: config.embeddingsRetryBaseMs,
      suggestionsMaxDistance: config.suggestionsMaxDistance
    }),
    Layer.succeed(ObservabilityConfig, {
      logLevel: config.logLevel,
      logFormat: config.logFormat,
      tracing: config.tracing,
      metricsPort: config.metricsPort,
      metricsHost: config.metricsHost
    })
  )

/** Every slice from the environment (the `ConfigProvider`), read and checked once; a bad variable fails it with `InvalidConfig`. */
export const layer: Layer.Layer<ServerConfig, InvalidConfig | Config.ConfigError> = Layer.unwrap(Effect.map(loadServerConfig, layerOf))

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
