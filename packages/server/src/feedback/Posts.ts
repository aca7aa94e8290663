import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { firstFreeSlug, slugify } from "../content/slug.js"

export interface NewPost {
  readonly id: string
  readonly organizationId: string
  readonly boardId: string
  readonly title: string
  /** Already sanitized. */
  readonly content: string
  readonly excerpt: string
  readonly visibility: "public" | "private"
  readonly statusId: string | null
  readonly metadata: Readonly<Record<string, string>>
  readonly source: "widget" | "import"
  /** The identified contact, or null for an anonymous post. */
  readonly contactId: string | null
  /** An explicit slug; otherwise one is derived from the title. */
  readonly slug?: string | undefined
  readonly createdAt?: string | undefined
}

const InsertedPost = Schema.Struct({ slug: Schema.String, createdAt: Schema.String })
const StatusId = Schema.Struct({ id: Schema.String })

/** Slug collisions among concurrent inserts are retried this many times before giving up. */
const slugAttempts = 20

export class Posts extends Context.Service<Posts, {
  /** The organization's status marked default, else its first one. */
  readonly defaultStatus: (organizationId: string) => Effect.Effect<Option.Option<string>>
  /** Inserts a post under a slug unique in its organization; yields the slug and `createdAt`. */
  readonly insert: (post: NewPost) => Effect.Effect<typeof InsertedPost.Type>
}>()("hearken/Posts") {
  static readonly layer = Layer.effect(
    Posts,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const defaultStatus = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: StatusId,
        execute: (organizationId) =>
          sql`SELECT id FROM statuses WHERE organization_id = ${organizationId}
              ORDER BY is_default DESC, position, id LIMIT 1`
      })

      const takenSlugs = (organizationId: string, base: string) =>
        sql<{ slug: string }>`SELECT slug FROM posts
          WHERE organization_id = ${organizationId}
            AND (slug = ${base} OR (slug LIKE ${base + "-%"} AND substr(slug, ${base.length + 2}) ~ '^[0-9]+$'))`.pipe(
            Effect.map((rows) => new Set(rows.map((row) => row.slug)))
          )

      const tryInsert = (post: NewPost, slug: string) =>
        sql<typeof InsertedPost.Type>`INSERT INTO posts
            (id, organization_id, board_id, title, slug, content, excerpt, visibility, status_id, metadata, source,
             contact_id, created_at, updated_at)
          VALUES (${post.id}, ${post.organizationId}, ${post.boardId}, ${post.title}, ${slug}, ${post.content},
            ${post.excerpt}, ${post.visibility}, ${post.statusId}, ${JSON.stringify(post.metadata)}::jsonb, ${post.source},
            ${post.contactId}, COALESCE(${post.createdAt ?? null}::timestamptz, now()), COALESCE(${post.createdAt ?? null}::timestamptz, now()))
          ON CONFLICT (organization_id, slug) DO NOTHING
          RETURNING slug, iso_ms(created_at) AS "createdAt"`

      const insert = Effect.fn("Posts.insert")(function*(post: NewPost) {
        if (post.slug !== undefined) {
          const [row] = yield* tryInsert(post, post.slug)
          if (row === undefined) return yield* Effect.die(new Error(`slug ${post.slug} is taken`))
          return row
        }
        const base = slugify(post.title)
        for (let attempt = 0; attempt < slugAttempts; attempt++) {
          const slug = firstFreeSlug(base, yield* takenSlugs(post.organizationId, base))
          const [row] = yield* tryInsert(post, slug)
          if (row !== undefined) return row
        }
        return yield* Effect.die(new Error(`no free slug for ${base} after ${slugAttempts} attempts`))
      }, Effect.orDie)

      return Posts.of({
        defaultStatus: Effect.fn("Posts.defaultStatus")((organizationId: string) =>
          defaultStatus(organizationId).pipe(Effect.map(Option.map((row) => row.id)), Effect.orDie)
        ),
        insert
      })
    })
  )
}
