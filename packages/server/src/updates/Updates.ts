import { Update } from "@hearken/api"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { Sanitizer } from "../content/Sanitizer.js"

const UpdateRow = Schema.Struct({
  id: Schema.String,
  title: Schema.String,
  slug: Schema.String,
  content: Schema.String,
  excerpt: Schema.String,
  imageUrl: Schema.NullOr(Schema.String),
  publishedAt: Schema.String,
  /** `published_at` at full precision: where the next page starts. */
  cursor: Schema.String
})

/** Where a page of the changelog ends: the last entry's `published_at` (exact) and id. */
export interface Cursor {
  readonly publishedAt: string
  readonly id: string
}

/** Entries read and sanitized at a time: what a changelog answer holds in memory at once. */
export const pageSize = 200

/**
 * Sanitized HTML by authored HTML, bounded in bytes (both strings, two bytes a
 * character): a large changelog cannot grow it without end.
 */
export const sanitizedCacheBytes = 16 * 1024 * 1024

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
  static readonly layer = Layer.effect(
    Updates,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const sanitizer = yield* Sanitizer
      const sanitized = new Map<string, string>()
      let cachedBytes = 0

      const sanitize = (html: string) => {
        const hit = sanitized.get(html)
        if (hit !== undefined) return hit
        const clean = sanitizer.update(html)
        const size = (html.length + clean.length) * 2
        if (size > sanitizedCacheBytes / 8) return clean
        for (const [k, v] of sanitized) {
          if (cachedBytes + size <= sanitizedCacheBytes) break
          sanitized.delete(k)
          cachedBytes -= (k.length + v.length) * 2
        }
        sanitized.set(html, clean)
        cachedBytes += size
        return clean
      }

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
          sql`SELECT id, title, slug, content, excerpt, image_url AS "imageUrl", iso_ms(published_at) AS "publishedAt",
                     published_at::text AS cursor
              FROM updates
              WHERE organization_id = ${organizationId} AND published_at IS NOT NULL AND published_at <= ${now}::timestamptz
                AND (${afterPublishedAt}::timestamptz IS NULL
                  OR published_at < ${afterPublishedAt}::timestamptz
                  OR (published_at = ${afterPublishedAt}::timestamptz AND id > ${afterId}))
              ORDER BY published_at DESC, id ASC
              LIMIT ${pageSize}`
      })

      return Updates.of({
        page: Effect.fn("Updates.page")(function*(organizationId: string, nowMs: number, cursor: Cursor | undefined) {
          const rows = yield* published({
            organizationId,
            now: new Date(nowMs).toISOString(),
            afterPublishedAt: cursor?.publishedAt ?? null,
            afterId: cursor?.id ?? null
          }).pipe(Effect.orDie)
          const entries = rows.map(({ cursor: _, ...row }) => new Update({ ...row, content: sanitize(row.content) }))
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
}
