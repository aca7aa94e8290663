import { Context, Effect, Layer, Metric, Option } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { DatabaseConfig } from "../config/database.js"
import { EmbeddingsConfig } from "../config/embeddings.js"
import { EmbeddingRepo } from "../embeddings/EmbeddingRepo.js"
import { poolSessions, poolSize } from "../sql/Database.js"
import { ReadSql } from "../sql/ReadReplica.js"
import { WebhookRepo } from "../webhooks/WebhookRepo.js"
import { labelled } from "./Metrics.js"

/**
 * The gauges the database knows (decision 0014), read when Prometheus
 * scrapes: nothing runs while nobody scrapes. The webhook queue and the
 * embedding backlog are database-wide (every instance reports the same
 * values); the pool is this instance's. The read replica's gauges come first,
 * read on the replica: they are there when the primary is not.
 */

const webhookQueue = (attributes: Record<string, string>) =>
  Metric.gauge("hearken_webhook_queue_depth", {
    description: "Webhook deliveries waiting, database-wide: due (to send now), scheduled (a retry later), held (endpoint paused)",
    attributes
  })
const webhookOldestDue = Metric.gauge("hearken_webhook_oldest_due_age_seconds", {
  description: "How long the oldest due webhook delivery has been waiting (0 when none is due), database-wide"
})
const webhookPaused = Metric.gauge("hearken_webhook_paused_endpoints", {
  description: "Webhook endpoints paused after repeated failures, database-wide"
})
const embeddingsBacklog = Metric.gauge("hearken_embeddings_backlog_posts", {
  description: "Public posts without an embedding of their current text for the configured model, database-wide"
})
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

const queueOf = labelled(webhookQueue)
const poolOf = labelled(poolConnections)

export class Gauges extends Context.Service<Gauges, {
  /** Reads the gauges from the database and sets them. */
  readonly read: Effect.Effect<void, SqlError.SqlError>
}>()("hearken/Gauges") {
  /** Needs the `WebhookRepo` and the `EmbeddingRepo`. */
  static readonly layerNoDeps = Layer.effect(
    Gauges,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const database = yield* DatabaseConfig
      const embeddingsConfig = yield* EmbeddingsConfig
      const webhooks = yield* WebhookRepo
      const embeddings = yield* EmbeddingRepo
      const { replica } = yield* ReadSql

      const read = Effect.gen(function*() {
        if (Option.isSome(replica)) {
          const lag = yield* replica.value.lag
          if (Option.isSome(lag)) {
            yield* Metric.update(replicaLagSeconds, lag.value.seconds)
            yield* Metric.update(replicaLagBytes, lag.value.bytes)
            yield* Metric.update(replicaStreaming, lag.value.streaming ? 1 : 0)
          }
          yield* Metric.update(replicaUp, (yield* replica.value.up) ? 1 : 0)
        }
        const queue = yield* webhooks.queueState
        if (queue !== undefined) {
          yield* Metric.update(queueOf({ state: "due" }), queue.due)
          yield* Metric.update(queueOf({ state: "scheduled" }), queue.scheduled)
          yield* Metric.update(queueOf({ state: "held" }), queue.held)
          yield* Metric.update(webhookOldestDue, queue.oldestDueSeconds)
          yield* Metric.update(webhookPaused, queue.paused)
        }
        if (Option.isSome(embeddingsConfig.embeddings)) {
          const { model, dimensions } = embeddingsConfig.embeddings.value
          yield* Metric.update(embeddingsBacklog, yield* embeddings.backlog({ name: model, dimensions }))
        }
        yield* Metric.update(poolMax, poolSize(database))
        // PGlite has one connection, and no pool to watch.
        if (Option.isSome(database.databaseUrl)) {
          const pool = yield* poolSessions(sql)
          yield* Metric.update(poolOf({ state: "in_use" }), pool.inUse)
          yield* Metric.update(poolOf({ state: "idle" }), pool.idle)
        }
      })

      return Gauges.of({ read })
    })
  )

  static readonly layer = this.layerNoDeps.pipe(Layer.provide([WebhookRepo.layer, EmbeddingRepo.layer]))
}
