import { Option, Redacted } from "effect"
import { Cluster, type ClusterOptions, Redis, type RedisOptions } from "ioredis"
import type { RedisTopology } from "../config/rateLimits.js"

/** Past this a Redis answer is too late: the request is refused with 503 instead of waiting. */
export const redisTimeoutMs = 500

/** Longest wait between two attempts to reconnect, to a server, a sentinel or a cluster. */
const reconnectAtMostMs = 1_000

/** The wait before reconnection attempt `attempt`: 100 ms more each time, up to `reconnectAtMostMs`. */
const backoff = (attempt: number) => Math.min(100 * attempt, reconnectAtMostMs)

const passwordOf = (password: Option.Option<Redacted.Redacted<string>>) =>
  Option.match(password, { onNone: () => ({}), onSome: (secret) => ({ password: Redacted.value(secret) }) })

/**
 * Every connection the limiter opens: no offline queue and no retries per
 * command, so that a Redis that is down or frozen fails a request fast (503),
 * while the connection itself keeps reconnecting in the background.
 */
export const redisOptions = {
  enableOfflineQueue: false,
  commandTimeout: redisTimeoutMs,
  maxRetriesPerRequest: 0,
  connectTimeout: 1_000,
  retryStrategy: backoff
} satisfies RedisOptions

/**
 * Through Sentinel (decision 0036): each (re)connection asks the sentinels
 * where the master is and checks the role its `INFO` reports. The master's death closes the
 * connection, and the attempts every second at most land on the new master
 * once the sentinels name it; `failoverDetector` reconnects at once on
 * `+switch-master`, and a `READONLY` answer (a master demoted under us)
 * reconnects too, so that the limiter never writes to a replica.
 */
const sentinelOptions = (topology: Extract<RedisTopology, { _tag: "Sentinel" }>) => ({
  ...redisOptions,
  sentinels: topology.sentinels.map(({ host, port }) => ({ host, port })),
  name: topology.name,
  ...passwordOf(topology.password),
  ...Option.match(topology.sentinelPassword, { onNone: () => ({}), onSome: (secret) => ({ sentinelPassword: Redacted.value(secret) }) }),
  role: "master",
  sentinelRetryStrategy: backoff,
  sentinelCommandTimeout: redisTimeoutMs,
  failoverDetector: true,
  reconnectOnError: (error: Error) => error.message.startsWith("READONLY") ? 2 : false
}) satisfies RedisOptions

/**
 * A Cluster (decision 0036): the same fail-fast connections to each node;
 * no retry after a closed connection or `CLUSTERDOWN` (the request gets 503,
 * the next one tries again), `MOVED` followed at once; a node that comes back
 * is reconnected to, and the slot map refreshed, by the next request that
 * reaches it.
 */
const clusterOptions = (password: Option.Option<Redacted.Redacted<string>>) => ({
  enableOfflineQueue: false,
  clusterRetryStrategy: backoff,
  clusterNodeRetryStrategy: backoff,
  retryDelayOnFailover: 0,
  retryDelayOnClusterDown: 0,
  retryDelayOnTryAgain: 0,
  maxRedirections: 4,
  slotsRefreshTimeout: redisTimeoutMs,
  redisOptions: {
    commandTimeout: redisTimeoutMs,
    maxRetriesPerRequest: 0,
    connectTimeout: 1_000,
    ...passwordOf(password)
  }
}) satisfies ClusterOptions

/** A client of `topology`, connecting at once. */
export const connect = (topology: RedisTopology): Redis | Cluster => {
  switch (topology._tag) {
    case "Standalone":
      return new Redis(Redacted.value(topology.url), redisOptions)
    case "Sentinel":
      return new Redis(sentinelOptions(topology))
    case "Cluster":
      return new Cluster(topology.nodes.map(({ host, port }) => ({ host, port })), clusterOptions(topology.password))
  }
}

/** What a topology is called in a log line (no address, no credentials). */
export const describe = (topology: RedisTopology) =>
  topology._tag === "Standalone" ? "Redis" : topology._tag === "Sentinel" ? "Redis (Sentinel)" : "Redis Cluster"
