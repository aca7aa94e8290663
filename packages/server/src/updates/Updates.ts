import { Update } from "@hearken/api/effect"
import { Array as Arr, Context, Effect, Layer, Option, Schema, Semaphore } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { Sanitizer, sanitizerVersion } from "../content/Sanitizer.js"
import { ReadSql } from "../sql/ReadReplica.js"
import { orDie } from "../sql/SqlFailure.js"

const UpdateRow = Schema.Struct({
  id: Schema.String,
  title: Schema.String,
  slug: Schema.String,
  content: Schema.String,
  excerpt: Schema.String,
  imageUrl: Schema.NullOr(Schema.String),
  publishedAt: Schema.String,
  /** `published_at` at full precision: where the next page starts. */
  cursor: Schema.String,
  /** The content as served, when kept for this HTML and this sanitizer. */
  served: Schema.NullOr(Schema.String),
  sourceHash: Schema.String
})

/** Where a page of the changelog ends: the last entry's `published_at` (exact) and id. */
export interface Cursor {
  readonly publishedAt: string
  readonly id: string
}

/** Entries read and sanitized at a time: what a changelog answer holds in memory at once. */
export const pageSize = 200

const encodeUpdate = Schema.encodeSync(Update)

export class Updates extends Context.Service<Updates, {
  /**
   * One page of the entries published by `nowMs` (the `Clock`'s time), newest
   * first, after `cursor`; the next page's cursor when this one is full.
   */
  readonly page: (organizationId: string, nowMs: number, cursor: Cursor | undefined) => Effect.Effect<{
    readonly entries: ReadonlyArray<Update>
    readonly next: Option.Option<Cursor>
  }>
  /** Entries as their JSON (the array's elements, without brackets or commas). */
  readonly toJson: (entries: ReadonlyArray<Update>) => ReadonlyArray<string>
}>()("hearken/Updates") {
  /** Needs the `Sanitizer`. */
  static readonly layerNoDeps = Layer.effect(
    Updates,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { client: reads, replica } = yield* ReadSql
      const sanitizer = yield* Sanitizer
      // Keeping in the background (with a replica): one write at a time, owned by this layer, so
      // that a slow or absent primary cannot pile them up, and none outlives the server.
      const scope = yield* Effect.scope
      const keeping = yield* Semaphore.make(1)

      /**
       * Keeps what was sanitized (migration 0008), on the primary; a failure only means sanitizing
       * again next time. Read from a replica, the answer does not wait for it: the primary may be
       * down. Then, while one keep is under way, another is skipped: it only fills a cache.
       */
      const keep = (rows: Array<{ update_id: string; source_hash: string; html: string }>) =>
        !Arr.isArrayNonEmpty(rows) ? Effect.void : sql`INSERT INTO update_html ${
          sql.insert(Arr.map(rows, (row) => ({ ...row, sanitizer: sanitizerVersion })))
        }
          ON CONFLICT (update_id) DO UPDATE
          SET source_hash = EXCLUDED.source_hash, sanitizer = EXCLUDED.sanitizer, html = EXCLUDED.html`.pipe(
          Effect.catchCause((cause) => Effect.logDebug("Could not keep sanitized changelog content", cause)),
          Effect.asVoid,
          (keep) =>
            Option.isSome(replica) ? Effect.asVoid(Effect.forkIn(keeping.withPermitsIfAvailable(1)(keep), scope)) : keep
        )

      const Request = Schema.Struct({
        organizationId: Schema.String,
        now: Schema.String,
        afterPublishedAt: Schema.NullOr(Schema.String),
        afterId: Schema.NullOr(Schema.String)
      })
      const published = SqlSchema.findAll({
        Request,
        Result: UpdateRow,
        execute: ({ afterId, afterPublishedAt, now, organizationId }) =>
          reads`SELECT u.id, u.title, u.slug, u.excerpt, u.image_url AS "imageUrl", iso_ms(u.published_at) AS "publishedAt",
                     u.published_at::text AS cursor, h.html AS served, md5(u.content) AS "sourceHash",
                     CASE WHEN h.html IS NULL THEN u.content ELSE '' END AS content
              FROM updates u
              LEFT JOIN update_html h
                ON h.update_id = u.id AND h.source_hash = md5(u.content) AND h.sanitizer = ${sanitizerVersion}
              WHERE u.organization_id = ${organizationId} AND u.published_at IS NOT NULL
                AND u.published_at <= ${now}::timestamptz
                AND (${afterPublishedAt}::timestamptz IS NULL
                  OR u.published_at < ${afterPublishedAt}::timestamptz
                  OR (u.published_at = ${afterPublishedAt}::timestamptz AND u.id > ${afterId}))
              ORDER BY u.published_at DESC, u.id ASC
              LIMIT ${pageSize}`
      })

      return Updates.of({
        page: Effect.fn("Updates.page")(function*(organizationId: string, nowMs: number, cursor: Cursor | undefined) {
          const rows = yield* published({
            organizationId,
            now: new Date(nowMs).toISOString(),
            afterPublishedAt: cursor?.publishedAt ?? null,
            afterId: cursor?.id ?? null
          }).pipe(orDie)
          const fresh: Array<{ update_id: string; source_hash: string; html: string }> = []
          const entries = rows.map(({ content, cursor: _, served, sourceHash, ...row }) => {
            if (served !== null) return new Update({ ...row, content: served })
            const html = sanitizer.update(content)
            fresh.push({ update_id: row.id, source_hash: sourceHash, html })
            return new Update({ ...row, content: html })
          })
          yield* keep(fresh)
          const last = rows.at(-1)
          return {
            entries,
            next: rows.length === pageSize && last !== undefined
              ? Option.some({ publishedAt: last.cursor, id: last.id })
              : Option.none()
          }
        }),
        toJson: (entries) => entries.map((entry) => JSON.stringify(encodeUpdate(entry)))
      })
    })
  )

  static readonly layer = this.layerNoDeps.pipe(Layer.provide(Sanitizer.layer))
}
