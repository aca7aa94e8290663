import { Context, Effect, Layer } from "effect"
import type { SqlError } from "effect/sql"

/**
 * The gauges the database knows (decision 0014), read when Prometheus
 * scrapes: nothing runs while nobody scrapes. Each feature declares its own
 * gauges and reads its own numbers (`sql/DatabaseGauges.ts`,
 * `webhooks/WebhookGauges.ts`, `embeddings/EmbeddingGauges.ts`); `App.ts`
 * lists the readers, in the order they are read: the read replica's first,
 * read on the replica, so they are there when the primary is not. A reader
 * that fails stops the ones after it; the scrape still serves the counters.
 */
export type GaugeReader = Effect.Effect<void, SqlError.SqlError>

export class Gauges extends Context.Service<Gauges, {
  /** Reads the gauges from the database and sets them. */
  readonly read: GaugeReader
}>()("hearken/Gauges") {
  /** The readers, each built from the services it needs, read one after another. */
  static readonly from = <Reader extends Effect.Effect<GaugeReader, never, any>>(
    readers: ReadonlyArray<Reader>
  ): Layer.Layer<Gauges, never, Effect.Services<Reader>> =>
    Layer.effect(
      Gauges,
      Effect.map(
        Effect.forEach(readers, (reader): Effect.Effect<GaugeReader, never, Effect.Services<Reader>> => reader),
        (reads) => Gauges.of({ read: Effect.forEach(reads, (read) => read, { discard: true }) })
      )
    )
}
