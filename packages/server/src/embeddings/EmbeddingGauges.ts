import { Effect, Metric, Option } from "effect"
import { EmbeddingsConfig } from "../config/embeddings.js"
import type { GaugeReader } from "../observability/Gauges.js"
import { EmbeddingRepo } from "./EmbeddingRepo.js"

/** The embedding back-fill's gauge (decision 0014), database-wide; nothing without `EMBEDDINGS_URL`. */

const embeddingsBacklog = Metric.gauge("hearken_embeddings_backlog_posts", {
  description: "Public posts without an embedding of their current text for the configured model, database-wide"
})

export const reader: Effect.Effect<GaugeReader, never, EmbeddingRepo | EmbeddingsConfig> = Effect.gen(function*() {
  const embeddings = yield* EmbeddingRepo
  const config = yield* EmbeddingsConfig
  return Effect.gen(function*() {
    if (Option.isNone(config.embeddings)) return
    const { model, dimensions } = config.embeddings.value
    yield* Metric.update(embeddingsBacklog, yield* embeddings.backlog({ name: model, dimensions }))
  })
})
