import { expect } from "vitest"
import { ids, widgetClient } from "./client.js"
import type { TestDatabase } from "./database.js"
import type { Embedder, FakeEmbeddings } from "./embeddings.js"
import { eventually } from "./wait.js"

/** A model as the server is configured with it: `EMBEDDINGS_MODEL` and `EMBEDDINGS_DIMENSIONS`. */
export interface TestModel {
  readonly name: string
  readonly dimensions: number
}

/** The model a fake embedder stands for: `fake-<embedder><suffix>`, of its size. */
export const fakeModel = (embedder: Embedder, fake: FakeEmbeddings, suffix = ""): TestModel =>
  ({ name: `fake-${embedder}${suffix}`, dimensions: fake.dimensions })

/** The server's environment for `model` served by `fake`. */
export const embeddingsEnv = (fake: FakeEmbeddings, model: TestModel) => ({
  EMBEDDINGS_URL: fake.url,
  EMBEDDINGS_MODEL: model.name,
  EMBEDDINGS_DIMENSIONS: String(model.dimensions),
  // The calibrator sweeps every min(10 s, this): calibrated within a fraction of a second.
  EMBEDDINGS_RETRY_BASE_MS: "200"
})

export interface Draft {
  readonly title: string
  /** Plain text; sent as one paragraph. */
  readonly content?: string
}

/** The ids `POST /suggestions` of the API at `api` answers for `draft` on a board of `organizationId`. */
export const suggestionIds = async (api: string, organizationId: string, boardId: string, draft: Draft): Promise<Array<string>> => {
  const res = await widgetClient(new URL(api).origin).suggest({
    organizationId,
    boardId,
    title: draft.title,
    content: draft.content === undefined ? "" : `<p>${draft.content}</p>`
  })
  expect(res.status).toBe(200)
  return ids(res)
}

/**
 * `ask` while `fake` fails every call: the lexical answer alone, as a failure
 * is not cached (a draft whose vector the server cached is still answered by
 * meaning).
 */
export const withModelFailing = async <A>(fake: FakeEmbeddings, ask: () => Promise<A>): Promise<A> => {
  fake.mode = "error"
  try {
    return await ask()
  } finally {
    fake.mode = "ok"
  }
}

export interface CalibrationRow {
  /** '' for the organization's pool. */
  readonly boardId: string
  readonly organizationId: string
  readonly posts: number
  readonly distances: ReadonlyArray<number>
  readonly newest: string | null
  /** `computed_at`, in milliseconds since the epoch. */
  readonly computedMs: number
}

/**
 * The model's rows of `embedding_calibrations`, by board id (the pools, '',
 * first), of one organization when it is given.
 */
export const calibrationRows = async (db: TestDatabase, model: TestModel, organizationId?: string): Promise<ReadonlyArray<CalibrationRow>> =>
  (await db.query<CalibrationRow>((sql) =>
    sql`SELECT board_id AS "boardId", organization_id AS "organizationId", posts, distances, newest::text AS newest,
        (extract(epoch FROM computed_at) * 1000)::float8 AS "computedMs"
      FROM embedding_calibrations WHERE model = ${model.name} AND dimensions = ${model.dimensions}
        AND (${organizationId ?? null}::text IS NULL OR organization_id = ${organizationId ?? null})
      ORDER BY board_id, organization_id`
  )).map((row) => ({ ...row, distances: row.distances.map(Number) }))

interface BoardState {
  readonly boardId: string
  readonly organizationId: string
  /** Public posts of the public board. */
  readonly posts: number
  /** Those with an embedding for the model. */
  readonly embedded: number
  /** The `posts` of its calibration row; null without one. */
  readonly calibrated: number | null
}

const boardStates = (db: TestDatabase, model: TestModel) =>
  db.query<BoardState>((sql) =>
    sql`SELECT p.board_id AS "boardId", b.organization_id AS "organizationId", count(*)::int AS posts, count(e.embedding)::int AS embedded,
        c.posts AS calibrated
      FROM posts p
      JOIN boards b ON b.id = p.board_id AND b.visibility = 'public'
      LEFT JOIN post_embeddings e ON e.post_id = p.id AND e.model = ${model.name} AND e.dimensions = ${model.dimensions}
      LEFT JOIN embedding_calibrations c ON c.board_id = p.board_id AND c.model = ${model.name} AND c.dimensions = ${model.dimensions}
      WHERE p.visibility = 'public'
      GROUP BY p.board_id, b.organization_id, c.posts
      ORDER BY p.board_id`
  )

/**
 * Waits until the model's calibration is up to date: every public post of a
 * public board is embedded, each such board has a calibration row whose
 * `posts` is its number of public posts, no other board has one, and each of
 * their organizations has a pool row computed after (or with) the last of its
 * boards' and no other organization has one. Yields the model's rows.
 */
export const calibrated = async (db: TestDatabase, model: TestModel, timeoutMs = 20_000): Promise<ReadonlyArray<CalibrationRow>> => {
  let last: ReadonlyArray<BoardState> = []
  return eventually(`the calibration of ${model.name}`, async () => {
    last = await boardStates(db, model)
    if (last.length === 0 || !last.every((b) => b.embedded === b.posts && b.calibrated === b.posts)) return undefined
    const rows = await calibrationRows(db, model)
    const pools = rows.filter((r) => r.boardId === "")
    const boards = rows.filter((r) => r.boardId !== "")
    // No row is left of a board that has no public posts any more (or was made private).
    if (boards.length !== last.length) return undefined
    const organizations = new Set(last.map((b) => b.organizationId))
    if (pools.length !== organizations.size) return undefined
    for (const organizationId of organizations) {
      const pool = pools.find((r) => r.organizationId === organizationId)
      if (pool === undefined || boards.some((r) => r.organizationId === organizationId && r.computedMs > pool.computedMs)) return undefined
    }
    return rows
  }, { timeoutMs, everyMs: 100, describe: () => JSON.stringify(last) })
}
