import { Config, Context, Effect, Option, Redacted, Schema, SchemaIssue, SchemaTransformation } from "effect"
import { isIP } from "node:net"
import { InvalidConfig } from "./InvalidConfig.js"
import { Decimal, Token, UrlString } from "./schemas.js"

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
export const redisSettings = Config.all({
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
export const redisTopology = (
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

/** Multiplies every published per-minute limit (`rate-limit/http.ts`): benchmarks only. */
export const rateLimitMultiplier = Config.schema(Decimal(1, 1_000_000, "a number between 1 and 1000000"), "RATE_LIMIT_MULTIPLIER").pipe(
  Config.withDefault(1)
)

/** The rate limiter's settings (`rate-limit/`); the client's address comes from `TRUST_PROXY` (`HttpConfig`). */
export interface RateLimitConfigShape {
  /** The rate limiter's Redis: none, `REDIS_URL`, `REDIS_SENTINELS` or `REDIS_CLUSTER_NODES` (`redisTopology`). */
  readonly redis: Option.Option<RedisTopology>
  readonly rateLimitMultiplier: number
}

export class RateLimitConfig extends Context.Service<RateLimitConfig, RateLimitConfigShape>()("hearken/RateLimitConfig") {}
