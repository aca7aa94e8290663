import { Effect, Metric, Option } from "effect"
import { SqlClient } from "effect/sql"
import { ServerConfig } from "../config.js"
import { applicationName, poolSize } from "../sql/Database.js"
import { labelled } from "./Metrics.js"

/**
 * The gauges the database knows (decision 0014), read when Prometheus
 * scrapes: nothing runs while nobody scrapes. The webhook queue and the
 * embedding backlog are database-wide (every instance reports the same
 * values); the pool is this instance's.
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

const queueOf = labelled(webhookQueue)
const poolOf = labelled(poolConnections)

interface QueueRow {
  readonly due: number
  readonly scheduled: number
  readonly held: number
  readonly oldestDueSeconds: number
  readonly paused: number
}

/** Reads the gauges from the database and sets them. */
export const readGauges = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const config = yield* ServerConfig
  // A new delivery's `next_attempt_at` is '-infinity' (due at once): it has been due since it was created.
  const [queue] = yield* sql<QueueRow>`SELECT
      count(*) FILTER (WHERE status = 'pending' AND next_attempt_at <= now())::int AS due,
      count(*) FILTER (WHERE status = 'pending' AND next_attempt_at > now())::int AS scheduled,
      count(*) FILTER (WHERE status = 'held')::int AS held,
      COALESCE(extract(epoch FROM now() - min(greatest(next_attempt_at, created_at))
        FILTER (WHERE status = 'pending' AND next_attempt_at <= now())), 0)::float8 AS "oldestDueSeconds",
      (SELECT count(*) FROM webhook_endpoints WHERE paused_at IS NOT NULL)::int AS paused
    FROM webhook_deliveries WHERE status IN ('pending', 'held')`
  if (queue !== undefined) {
    yield* Metric.update(queueOf({ state: "due" }), queue.due)
    yield* Metric.update(queueOf({ state: "scheduled" }), queue.scheduled)
    yield* Metric.update(queueOf({ state: "held" }), queue.held)
    yield* Metric.update(webhookOldestDue, queue.oldestDueSeconds)
    yield* Metric.update(webhookPaused, queue.paused)
  }
  if (Option.isSome(config.embeddings)) {
    const { model, dimensions } = config.embeddings.value
    const [backlog] = yield* sql<{ posts: number }>`SELECT count(*)::int AS posts FROM posts p
      WHERE p.visibility = 'public' AND NOT EXISTS (
        SELECT 1 FROM post_embeddings e WHERE e.post_id = p.id AND e.model = ${model} AND e.dimensions = ${dimensions}
          AND e.source_hash = p.text_hash)`
    yield* Metric.update(embeddingsBacklog, backlog?.posts ?? 0)
  }
  yield* Metric.update(poolMax, poolSize(config))
  // The pool of @effect/sql-pg does not expose its counts; PostgreSQL knows this instance's sessions by name.
  if (Option.isSome(config.databaseUrl)) {
    const [pool] = yield* sql<{ inUse: number; idle: number }>`SELECT
        count(*) FILTER (WHERE state <> 'idle' AND pid <> pg_backend_pid())::int AS "inUse",
        count(*) FILTER (WHERE state = 'idle')::int AS idle
      FROM pg_stat_activity WHERE application_name = ${applicationName}`
    yield* Metric.update(poolOf({ state: "in_use" }), pool?.inUse ?? 0)
    yield* Metric.update(poolOf({ state: "idle" }), pool?.idle ?? 0)
  }
})
