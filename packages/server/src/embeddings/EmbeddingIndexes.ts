import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, type SqlError, SqlSchema } from "effect/sql"
import { Sessions } from "../sql/Database.js"
import { indexKind, indexName, Model, modelSql } from "./Vectors.js"
import { decoded } from "../sql/SqlFailure.js"

/** The state of an index: built and usable, or being built by some instance. */
const IndexState = Schema.Struct({ valid: Schema.Boolean, building: Schema.Boolean })

/** The upkeep of the models' HNSW indexes on `post_embeddings` (decision 0009). */
export class EmbeddingIndexes extends Context.Service<EmbeddingIndexes, {
  /**
   * Creates the model's HNSW index unless it exists (dropping a broken one
   * left by an interrupted concurrent build). Yields whether there is one.
   */
  readonly ensureIndex: (model: Model, options: { readonly concurrently: boolean }) => Effect.Effect<boolean, SqlError.SqlError>
}>()("hearken/EmbeddingIndexes") {
  static readonly layer = Layer.effect(
    EmbeddingIndexes,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const sessions = yield* Sessions

      const state = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: IndexState,
        execute: (name) =>
          sql`SELECT i.indisvalid AS valid,
            EXISTS (SELECT 1 FROM pg_stat_progress_create_index b WHERE b.index_relid = c.oid) AS building
          FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid WHERE c.relname = ${name}`
      })

      // The name is a hash of the model (`indexName`): safe as an identifier.
      const drop = SqlSchema.void({ Request: Schema.String, execute: (name) => sql.unsafe(`DROP INDEX IF EXISTS ${name}`) })

      // Past the statement timeout: a build takes as long as the table is big.
      const create = SqlSchema.void({
        Request: Schema.Struct({ model: Model, concurrently: Schema.Boolean }),
        execute: ({ concurrently, model }) => {
          const m = modelSql(model)
          return sessions.unbounded(
            `CREATE INDEX ${concurrently ? "CONCURRENTLY " : ""}IF NOT EXISTS ${indexName(model)}
           ON post_embeddings USING hnsw (${m.column} ${m.opclass}) WHERE ${m.predicate}`
          )
        }
      })

      const ensureIndex = Effect.fn("EmbeddingIndexes.ensureIndex")(function*(model: Model, options: { readonly concurrently: boolean }) {
        const kind = indexKind(model.dimensions)
        if (kind === undefined) return false
        const name = indexName(model)
        const existing = yield* state(name)
        if (Option.isSome(existing)) {
          if (existing.value.valid) return true
          // Another instance is building it: leave it be (dropping it would queue a lock that stops every query on the table).
          if (existing.value.building) return true
          yield* drop(name)
        }
        yield* create({ model, concurrently: options.concurrently })
        return true
      }, decoded)

      return EmbeddingIndexes.of({ ensureIndex })
    })
  )
}
