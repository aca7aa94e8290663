import { Effect, Metric, Option } from "effect"
import { SqlClient } from "effect/sql"
import { DatabaseConfig } from "../config/database.js"
import type { GaugeReader } from "../observability/Gauges.js"
import { labelled } from "../observability/Metrics.js"
import { poolSessions, poolSize } from "./Database.js"
import { ReadSql } from "./ReadReplica.js"

/** The database's own gauges (decision 0014): this instance's pool, and the read replica's state. */

const poolConnections = (attributes: Record<string, string>) =>
  Metric.gauge("hearken_db_pool_connections", {
    description: "This instance's PostgreSQL connections: in_use (running a statement or in a transaction) and idle",
    attributes
  })
const poolMax = Metric.gauge("hearken_db_pool_max_connections", {
  description: "The most connections this instance's pool opens"
})

const replicaUp = Metric.gauge("hearken_db_replica_up", {
  description: "1 while the reads (/boards, /updates, suggestions) go to the read replica (DATABASE_READ_URL), 0 while they fall back to the primary"
})
const replicaLagSeconds = Metric.gauge("hearken_db_replica_lag_seconds", {
  description: "The read replica's replay lag: 0 when it has replayed all the WAL it received, else the age of the last transaction it replayed (an upper bound); its last value while the replica cannot be read"
})
const replicaStreaming = Metric.gauge("hearken_db_replica_streaming", {
  description: "1 while the read replica's WAL receiver streams from the primary, 0 when it has stopped (its lag then reads 0 while it falls behind); its last value while the replica cannot be read"
})
const replicaLagBytes = Metric.gauge("hearken_db_replica_lag_bytes", {
  description: "WAL the read replica has received from the primary but not replayed yet, in bytes; its last value while the replica cannot be read"
})

const poolOf = labelled(poolConnections)

/** The read replica's gauges, read on the replica (nothing without `DATABASE_READ_URL`). */
export const replica: Effect.Effect<GaugeReader, never, ReadSql> = Effect.gen(function*() {
  const { replica } = yield* ReadSql
  return Effect.gen(function*() {
    if (Option.isNone(replica)) return
    const lag = yield* replica.value.lag
    if (Option.isSome(lag)) {
      yield* Metric.update(replicaLagSeconds, lag.value.seconds)
      yield* Metric.update(replicaLagBytes, lag.value.bytes)
      yield* Metric.update(replicaStreaming, lag.value.streaming ? 1 : 0)
    }
    yield* Metric.update(replicaUp, (yield* replica.value.up) ? 1 : 0)
  })
})

/** This instance's pool: its size, and its sessions as `pg_stat_activity` sees them (PGlite has one connection, and no pool to watch). */
export const pool: Effect.Effect<GaugeReader, never, SqlClient.SqlClient | DatabaseConfig> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const config = yield* DatabaseConfig
  return Effect.gen(function*() {
    yield* Metric.update(poolMax, poolSize(config))
    if (Option.isSome(config.databaseUrl)) {
      const sessions = yield* poolSessions(sql)
      yield* Metric.update(poolOf({ state: "in_use" }), sessions.inUse)
      yield* Metric.update(poolOf({ state: "idle" }), sessions.idle)
    }
  })
})
