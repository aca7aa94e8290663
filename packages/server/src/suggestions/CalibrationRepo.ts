import { Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { modelPredicate } from "../embeddings/EmbeddingRepo.js"
import type { Model } from "../embeddings/Embeddings.js"
import { type Background, ownBackgroundFrom, poolBoards } from "./calibration.js"

/** A board whose background is missing or out of date: its public embedded posts now. */
export interface StaleBoard {
  readonly boardId: string
  /** 0: the board has none left, and its row goes. */
  readonly posts: number
  readonly newest: string | null
  /** When its row was last computed (ms since the epoch); null without one. */
  readonly computedMs: number | null
}

/** The board id of the model's pool. */
const pool = ""

/** The SQL of `embedding_calibrations` (decision 0023). */
export class CalibrationRepo extends Context.Service<CalibrationRepo, {
  /** The board's background and the model's pool; empty lists where there is none yet. */
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
  /** The distances of up to `poolBoards` boards with a background of their own, most recently computed first: what the pool is made of. */
  readonly boards: (model: Model) => Effect.Effect<ReadonlyArray<ReadonlyArray<number>>, SqlError.SqlError>
  readonly savePool: (model: Model, distances: ReadonlyArray<number>, nowMs: number) => Effect.Effect<void, SqlError.SqlError>
}>()("hearken/CalibrationRepo") {
  static readonly layer = Layer.effect(
    CalibrationRepo,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const iso = (ms: number) => new Date(ms).toISOString()

      const background = Effect.fn("CalibrationRepo.background")(function*(model: Model, boardId: string) {
        const rows = yield* sql<{ boardId: string; distances: ReadonlyArray<number>; posts: number }>`SELECT board_id AS "boardId", distances, posts
          FROM embedding_calibrations
          WHERE model = ${model.name} AND dimensions = ${model.dimensions} AND board_id IN (${boardId}, ${pool})`
        const board = rows.find((r) => r.boardId === boardId)
        const shared = rows.find((r) => r.boardId === pool)
        return { board: (board?.distances ?? []).map(Number), pool: (shared?.distances ?? []).map(Number), posts: board?.posts ?? 0 }
      })

      const stale = Effect.fn("CalibrationRepo.stale")((model: Model, limit: number) =>
        sql<StaleBoard>`WITH state AS (
            SELECT p.board_id, count(*)::int AS posts, max(e.embedded_at) AS newest
            FROM post_embeddings e
            JOIN posts p ON p.id = e.post_id AND p.visibility = 'public'
            JOIN boards b ON b.id = p.board_id AND b.visibility = 'public'
            WHERE ${sql.literal(modelPredicate(model, "e."))} AND e.embedding IS NOT NULL
            GROUP BY p.board_id
          ), saved AS (
            SELECT board_id, posts, newest, computed_at FROM embedding_calibrations
            WHERE model = ${model.name} AND dimensions = ${model.dimensions} AND board_id <> ${pool}
          )
          SELECT coalesce(s.board_id, c.board_id) AS "boardId", coalesce(s.posts, 0) AS posts, s.newest::text AS newest,
            (extract(epoch FROM c.computed_at) * 1000)::float8 AS "computedMs"
          FROM state s FULL JOIN saved c ON c.board_id = s.board_id
          WHERE c.board_id IS NULL OR s.board_id IS NULL OR c.posts <> s.posts OR c.newest IS DISTINCT FROM s.newest
          ORDER BY c.board_id IS NOT NULL, coalesce(s.board_id, c.board_id)
          LIMIT ${limit}`
      )

      const save = Effect.fn("CalibrationRepo.save")((model: Model, board: StaleBoard, distances: ReadonlyArray<number>, nowMs: number) =>
        sql`INSERT INTO embedding_calibrations (board_id, model, dimensions, distances, posts, newest, computed_at)
          VALUES (${board.boardId}, ${model.name}, ${model.dimensions}, ${`{${distances.join(",")}}`}::float8[], ${board.posts},
            ${board.newest}::timestamptz, ${iso(nowMs)}::timestamptz)
          ON CONFLICT (model, dimensions, board_id) DO UPDATE
            SET distances = EXCLUDED.distances, posts = EXCLUDED.posts, newest = EXCLUDED.newest, computed_at = EXCLUDED.computed_at`
          .pipe(Effect.asVoid)
      )

      const remove = Effect.fn("CalibrationRepo.remove")((model: Model, boardId: string) =>
        sql`DELETE FROM embedding_calibrations WHERE model = ${model.name} AND dimensions = ${model.dimensions} AND board_id = ${boardId}`
          .pipe(Effect.asVoid)
      )

      const boards = Effect.fn("CalibrationRepo.boards")((model: Model) =>
        sql<{ distances: ReadonlyArray<number> }>`SELECT distances FROM embedding_calibrations
          WHERE model = ${model.name} AND dimensions = ${model.dimensions} AND board_id <> ${pool}
            AND cardinality(distances) >= ${ownBackgroundFrom}
          ORDER BY computed_at DESC, board_id LIMIT ${poolBoards}`.pipe(Effect.map((rows) => rows.map((r) => r.distances.map(Number))))
      )

      const savePool = (model: Model, distances: ReadonlyArray<number>, nowMs: number) =>
        save(model, { boardId: pool, posts: 0, newest: null, computedMs: null }, distances, nowMs)

      return CalibrationRepo.of({ background, stale, save, remove, boards, savePool })
    })
  )
}
