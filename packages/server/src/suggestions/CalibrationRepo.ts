import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, type SqlError, SqlSchema } from "effect/sql"
import { Model, modelPredicate } from "../embeddings/Vectors.js"
import { iso } from "../sql/iso.js"
import { ReadSql } from "../sql/ReadReplica.js"
import { type Background, ownBackgroundFrom, poolBoards } from "./calibration.js"
import { decoded } from "../sql/SqlFailure.js"

/** A board whose background is missing or out of date: its public embedded posts now. */
const StaleBoard = Schema.Struct({
  boardId: Schema.String,
  organizationId: Schema.String,
  /** 0: the board has none left, and its row goes. */
  posts: Schema.Number,
  newest: Schema.NullOr(Schema.String),
  /** When its row was last computed (ms since the epoch); null without one. */
  computedMs: Schema.NullOr(Schema.Number)
})
export type StaleBoard = typeof StaleBoard.Type

/** Distances as PostgreSQL's `float8[]` gives them (numbers, or their text). */
const Distances = Schema.Array(Schema.Union([Schema.Number, Schema.NumberFromString]))

const Saved = Schema.Struct({ boardId: Schema.String, distances: Distances, posts: Schema.Number })
const BoardDistances = Schema.Struct({ distances: Distances })

/** The board id of an organization's pool. */
const pool = ""

/** The SQL of `embedding_calibrations` (decisions 0023 and 0027). */
export class CalibrationRepo extends Context.Service<CalibrationRepo, {
  /** The board's background and its organization's pool; empty lists where there is none yet. */
  readonly background: (model: Model, boardId: string) => Effect.Effect<Background, SqlError.SqlError>
  /**
   * Up to `limit` boards whose row is missing, or whose public embedded posts
   * (their number, or the newest embedding) changed since it was computed, or
   * that have none left; those never calibrated first. One grouped count over
   * the model's rows: about a second at 100k posts.
   */
  readonly stale: (model: Model, limit: number) => Effect.Effect<ReadonlyArray<StaleBoard>, SqlError.SqlError>
  readonly save: (model: Model, board: StaleBoard, distances: ReadonlyArray<number>, nowMs: number) => Effect.Effect<void, SqlError.SqlError>
  readonly remove: (model: Model, boardId: string) => Effect.Effect<void, SqlError.SqlError>
  /**
   * The distances of up to `poolBoards` of the organization's boards with a
   * background of their own, most recently computed first: what its pool is
   * made of.
   */
  readonly boards: (model: Model, organizationId: string) => Effect.Effect<ReadonlyArray<ReadonlyArray<number>>, SqlError.SqlError>
  /** Stores the organization's pool; drops it instead when none of its boards has a row left. */
  readonly savePool: (model: Model, organizationId: string, distances: ReadonlyArray<number>, nowMs: number) => Effect.Effect<void, SqlError.SqlError>
}>()("hearken/CalibrationRepo") {
  static readonly layer = Layer.effect(
    CalibrationRepo,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      // `background` is a suggestion's read (`ReadSql`); the calibrator reads its own writes on the primary.
      const reads = (yield* ReadSql).client
      const floats = (distances: ReadonlyArray<number>) => `{${distances.join(",")}}`
      const ModelBoard = Schema.Struct({ model: Model, boardId: Schema.String })
      const ModelOrganization = Schema.Struct({ model: Model, organizationId: Schema.String })

      // The pool of the board's own organization, never another's: an unknown board has neither.
      const saved = SqlSchema.findAll({
        Request: ModelBoard,
        Result: Saved,
        execute: ({ boardId, model }) =>
          reads`SELECT board_id AS "boardId", distances, posts
          FROM embedding_calibrations
          WHERE model = ${model.name} AND dimensions = ${model.dimensions} AND board_id IN (${boardId}, ${pool})
            AND organization_id = (SELECT organization_id FROM boards WHERE id = ${boardId})`
      })

      const background = Effect.fn("CalibrationRepo.background")(function*(model: Model, boardId: string) {
        const rows = yield* decoded(saved({ model, boardId }))
        const board = rows.find((r) => r.boardId === boardId)
        const shared = rows.find((r) => r.boardId === pool)
        return { board: board?.distances ?? [], pool: shared?.distances ?? [], posts: board?.posts ?? 0 }
      })

      const staleBoards = SqlSchema.findAll({
        Request: Schema.Struct({ model: Model, limit: Schema.Number }),
        Result: StaleBoard,
        execute: ({ limit, model }) =>
          sql`WITH state AS (
            SELECT p.board_id, b.organization_id, count(*)::int AS posts, max(e.embedded_at) AS newest
            FROM post_embeddings e
            JOIN posts p ON p.id = e.post_id AND p.visibility = 'public'
            JOIN boards b ON b.id = p.board_id AND b.visibility = 'public'
            WHERE ${sql.literal(modelPredicate(model, "e."))} AND e.embedding IS NOT NULL
            GROUP BY p.board_id, b.organization_id
          ), saved AS (
            SELECT board_id, organization_id, posts, newest, computed_at FROM embedding_calibrations
            WHERE model = ${model.name} AND dimensions = ${model.dimensions} AND board_id <> ${pool}
          )
          SELECT coalesce(s.board_id, c.board_id) AS "boardId", coalesce(s.organization_id, c.organization_id) AS "organizationId",
            coalesce(s.posts, 0) AS posts, s.newest::text AS newest,
            (extract(epoch FROM c.computed_at) * 1000)::float8 AS "computedMs"
          FROM state s FULL JOIN saved c ON c.board_id = s.board_id
          WHERE c.board_id IS NULL OR s.board_id IS NULL OR c.posts <> s.posts OR c.newest IS DISTINCT FROM s.newest
          ORDER BY c.board_id IS NOT NULL, coalesce(s.board_id, c.board_id)
          LIMIT ${limit}`
      })

      const stale = Effect.fn("CalibrationRepo.stale")((model: Model, limit: number) => decoded(staleBoards({ model, limit })))

      const upsert = SqlSchema.void({
        Request: Schema.Struct({ model: Model, board: StaleBoard, distances: Schema.String, computedAt: Schema.String }),
        execute: ({ board, computedAt, distances, model }) =>
          sql`INSERT INTO embedding_calibrations (board_id, organization_id, model, dimensions, distances, posts, newest, computed_at)
          VALUES (${board.boardId}, ${board.organizationId}, ${model.name}, ${model.dimensions}, ${distances}::float8[], ${board.posts},
            ${board.newest}::timestamptz, ${computedAt}::timestamptz)
          ON CONFLICT (model, dimensions, organization_id, board_id) DO UPDATE
            SET distances = EXCLUDED.distances, posts = EXCLUDED.posts, newest = EXCLUDED.newest, computed_at = EXCLUDED.computed_at`
      })

      const save = Effect.fn("CalibrationRepo.save")((model: Model, board: StaleBoard, distances: ReadonlyArray<number>, nowMs: number) =>
        decoded(upsert({ model, board, distances: floats(distances), computedAt: iso(nowMs) }))
      )

      const deleteBoard = SqlSchema.void({
        Request: ModelBoard,
        execute: ({ boardId, model }) =>
          sql`DELETE FROM embedding_calibrations WHERE model = ${model.name} AND dimensions = ${model.dimensions} AND board_id = ${boardId}`
      })

      const remove = Effect.fn("CalibrationRepo.remove")((model: Model, boardId: string) => decoded(deleteBoard({ model, boardId })))

      const boardDistances = SqlSchema.findAll({
        Request: ModelOrganization,
        Result: BoardDistances,
        execute: ({ model, organizationId }) =>
          sql`SELECT distances FROM embedding_calibrations
          WHERE model = ${model.name} AND dimensions = ${model.dimensions} AND organization_id = ${organizationId} AND board_id <> ${pool}
            AND cardinality(distances) >= ${ownBackgroundFrom}
          ORDER BY computed_at DESC, board_id LIMIT ${poolBoards}`
      })

      const boards = Effect.fn("CalibrationRepo.boards")((model: Model, organizationId: string) =>
        decoded(boardDistances({ model, organizationId })).pipe(Effect.map((rows) => rows.map((r) => r.distances)))
      )

      const upsertPool = SqlSchema.void({
        Request: Schema.Struct({ organization: ModelOrganization, distances: Schema.String, computedAt: Schema.String }),
        execute: ({ computedAt, distances, organization: { model, organizationId } }) => {
          const rows = sql`SELECT 1 FROM embedding_calibrations
          WHERE model = ${model.name} AND dimensions = ${model.dimensions} AND organization_id = ${organizationId} AND board_id <> ${pool}`
          return sql`WITH gone AS (
            DELETE FROM embedding_calibrations
            WHERE model = ${model.name} AND dimensions = ${model.dimensions} AND organization_id = ${organizationId} AND board_id = ${pool}
              AND NOT EXISTS (${rows})
          )
          INSERT INTO embedding_calibrations (board_id, organization_id, model, dimensions, distances, posts, newest, computed_at)
          SELECT ${pool}, ${organizationId}, ${model.name}, ${model.dimensions}, ${distances}::float8[], 0, NULL, ${computedAt}::timestamptz
          WHERE EXISTS (${rows})
          ON CONFLICT (model, dimensions, organization_id, board_id) DO UPDATE
            SET distances = EXCLUDED.distances, computed_at = EXCLUDED.computed_at`
        }
      })

      const savePool = Effect.fn("CalibrationRepo.savePool")((model: Model, organizationId: string, distances: ReadonlyArray<number>, nowMs: number) =>
        decoded(upsertPool({ organization: { model, organizationId }, distances: floats(distances), computedAt: iso(nowMs) }))
      )

      return CalibrationRepo.of({ background, stale, save, remove, boards, savePool })
    })
  )
}
