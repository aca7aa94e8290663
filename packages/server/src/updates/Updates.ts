import { Update } from "@hearken/api"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { Sanitizer } from "../content/Sanitizer.js"

const UpdateRow = Schema.Struct({
  id: Schema.String,
  title: Schema.String,
  slug: Schema.String,
  content: Schema.String,
  excerpt: Schema.String,
  imageUrl: Schema.NullOr(Schema.String),
  publishedAt: Schema.String
})

/** Sanitized HTML by authored HTML; bounded so that a large changelog cannot grow it without end. */
const cacheLimit = 2_000

export class Updates extends Context.Service<Updates, {
  /** Entries published by `nowMs` (the `Clock`'s time), newest first. */
  readonly listPublished: (organizationId: string, nowMs: number) => Effect.Effect<ReadonlyArray<Update>>
}>()("hearken/Updates") {
  static readonly layer = Layer.effect(
    Updates,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const sanitizer = yield* Sanitizer
      const sanitized = new Map<string, string>()

      const sanitize = (html: string) => {
        let clean = sanitized.get(html)
        if (clean === undefined) {
          clean = sanitizer.update(html)
          if (sanitized.size >= cacheLimit) sanitized.delete(sanitized.keys().next().value!)
          sanitized.set(html, clean)
        }
        return clean
      }

      const published = SqlSchema.findAll({
        Request: Schema.Struct({ organizationId: Schema.String, now: Schema.String }),
        Result: UpdateRow,
        execute: ({ now, organizationId }) =>
          sql`SELECT id, title, slug, content, excerpt, image_url AS "imageUrl", iso_ms(published_at) AS "publishedAt"
              FROM updates
              WHERE organization_id = ${organizationId} AND published_at IS NOT NULL AND published_at <= ${now}::timestamptz
              ORDER BY published_at DESC, id ASC`
      })

      return Updates.of({
        listPublished: Effect.fn("Updates.listPublished")(function*(organizationId: string, nowMs: number) {
          const rows = yield* published({ organizationId, now: new Date(nowMs).toISOString() }).pipe(Effect.orDie)
          return rows.map((row) => new Update({ ...row, content: sanitize(row.content) }))
        })
      })
    })
  )
}
