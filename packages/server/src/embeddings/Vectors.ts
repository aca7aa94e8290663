import { Schema } from "effect"
import { createHash } from "node:crypto"

/** The configured model: rows and indexes are tagged with both. */
export interface Model {
  readonly name: string
  readonly dimensions: number
}

/** A model, as a repository's request carries it. */
export const Model = Schema.Struct({ name: Schema.String, dimensions: Schema.Number })

/** A vector of the configured size. */
export type Vector = ReadonlyArray<number>

/** pgvector's text form. */
export const vectorLiteral = (vector: Vector) => `[${vector.join(",")}]`

/**
 * How a model's vectors are indexed (decision 0009). HNSW indexes `vector` up
 * to 2,000 dimensions and `halfvec` up to 4,000; past that there is no index
 * and a board's posts are compared one by one.
 */
export const indexKind = (dimensions: number): "vector" | "halfvec" | undefined =>
  dimensions <= 2_000 ? "vector" : dimensions <= 4_000 ? "halfvec" : undefined

/** One partial index per model and size, named by their hash (names are limited to 63 bytes). */
export const indexName = (model: Model) =>
  `post_embeddings_hnsw_${createHash("sha256").update(`${model.name}\u0000${model.dimensions}`).digest("hex").slice(0, 16)}`

/** A string as a SQL literal (standard_conforming_strings is on in every supported PostgreSQL). */
const quote = (value: string) => `'${value.replace(/'/g, "''")}'`

/**
 * The model's rows, and the expression its index is on, as literals: a
 * partial index is only used when the planner can prove its predicate, which
 * it cannot from a bind parameter in a generic plan.
 */
export const modelSql = (model: Model, alias = "") => {
  const n = Math.trunc(model.dimensions)
  const cast = indexKind(n) ?? "vector"
  return {
    predicate: `${alias}model = ${quote(model.name)} AND ${alias}dimensions = ${n}`,
    column: `(embedding::${cast}(${n}))`,
    cast: `${cast}(${n})`,
    opclass: `${cast}_cosine_ops`
  }
}

/** The rows of the model, as a literal predicate on `post_embeddings` (aliased with `alias`). */
export const modelPredicate = (model: Model, alias = "") => modelSql(model, alias).predicate
