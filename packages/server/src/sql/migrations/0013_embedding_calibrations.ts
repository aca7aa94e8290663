import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * What the semantic half of suggestions compares a draft's distances with
 * (decision 0023): per board and model, the distances from a sample of the
 * board's public posts to their nearest neighbour on the board, ascending.
 * `board_id` '' holds the model's pool across boards, the background of a
 * board too small to have its own. `posts` and `newest` are the board's public
 * embedded posts when it was computed: the calibrator recomputes when either
 * changes. No foreign key: a row of a board that is gone is deleted by the
 * calibrator, and the pool's row has no board.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE embedding_calibrations (
    board_id text NOT NULL,
    model text NOT NULL,
    dimensions integer NOT NULL,
    distances float8[] NOT NULL,
    posts integer NOT NULL,
    newest timestamptz,
    computed_at timestamptz NOT NULL,
    PRIMARY KEY (model, dimensions, board_id)
  )`
})
