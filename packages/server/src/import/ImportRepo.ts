import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import type { SqlFailure } from "../sql/SqlFailure.js"
import { type RowOutcome, upsertOutcome } from "../sql/upsertOutcome.js"

/** The lists of a fixture organization whose ids are global, and owned by one organization. */
export const ownedKinds = ["statuses", "webhooks", "boards", "posts", "updates"] as const
export type OwnedKind = typeof ownedKinds[number]

/** What an upsert did to the row (`upsertOutcome`): one row, whose `outcome` is null when the id belongs to another organization. */
type Outcome = ReadonlyArray<{ readonly outcome: RowOutcome | null }>

/** Every statement fails with what its SQL or its rows did: the `Importer` maps that once, for the whole import. */
type Q<A> = Effect.Effect<A, SqlFailure>

const Strings = Schema.Array(Schema.String)
const NullableString = Schema.NullOr(Schema.String)

export interface StatusRow {
  readonly id: string
  readonly organizationId: string
  readonly name: string
  readonly isDefault: boolean
  readonly position: number
}

export interface BoardRow {
  readonly id: string
  readonly organizationId: string
  readonly name: string
  readonly slug: string
  readonly visibility: "public" | "private"
  /** Null: now for a new board, kept for one that exists. */
  readonly createdAt: string | null
  readonly updatedAt: string | null
}

export interface PostRewrite {
  readonly id: string
  readonly boardId: string
  readonly title: string
  readonly content: string
  readonly excerpt: string
  readonly visibility: "public" | "private"
  readonly statusId: string
  readonly lexicon: string
  readonly titleLexicon: string
  /** Null: the post keeps its own. */
  readonly slug: string | null
  readonly createdAt: string | null
}

export interface UpdateRow {
  readonly id: string
  readonly organizationId: string
  readonly title: string
  readonly slug: string
  readonly content: string
  readonly excerpt: string
  readonly imageUrl: string | null
  /** Undefined: now for a new entry, kept for one that exists; null: a draft. */
  readonly publishedAt: string | null | undefined
}

/**
 * The fixture import's statements on `organizations`, `statuses`, `boards`, `posts` and `updates`
 * (the slugs of new posts are `Posts`'; secrets `OrganizationSecrets`'; endpoints the webhooks').
 * Every call runs in the caller's transaction.
 */
export class ImportRepo extends Context.Service<ImportRepo, {
  /** The organization that holds each of these ids in the database, by `kind id`. */
  readonly ownersOf: (ids: { readonly [K in OwnedKind]: ReadonlyArray<string> }) => Q<ReadonlyMap<string, string>>
  /** The post holding each of these slugs in the organization, by slug. */
  readonly slugHolders: (organizationId: string, slugs: ReadonlyArray<string>) => Q<ReadonlyMap<string, string>>
  readonly upsertOrganization: (id: string, name: string) => Q<void>
  readonly upsertStatus: (status: StatusRow) => Q<Outcome>
  /** Statuses not in `keep` stop being the default, as `defaultId` is; yields how many did. */
  readonly undefaultStatuses: (organizationId: string, defaultId: string, keep: ReadonlyArray<string>) => Q<number>
  readonly upsertBoard: (board: BoardRow) => Q<Outcome>
  /** The organization of the post `id`, if there is one. */
  readonly postOwner: (id: string) => Q<Option.Option<string>>
  /** Rewrites a post unless it is already as given; yields whether it was written. */
  readonly rewritePost: (post: PostRewrite) => Q<boolean>
  readonly upsertUpdate: (update: UpdateRow) => Q<Outcome>
}>()("hearken/ImportRepo") {
  static readonly layer = Layer.effect(
    ImportRepo,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const list = (values: ReadonlyArray<string>) => sql`(SELECT jsonb_array_elements_text(${JSON.stringify(values)}::jsonb))`

      const owners = SqlSchema.findAll({
        Request: Schema.Struct({ statuses: Strings, webhooks: Strings, boards: Strings, posts: Strings, updates: Strings }),
        Result: Schema.Struct({ kind: Schema.Literals(ownedKinds), id: Schema.String, organizationId: Schema.String }),
        execute: (ids) =>
          sql`SELECT 'statuses' AS kind, id, organization_id AS "organizationId" FROM statuses WHERE id IN ${list(ids.statuses)}
            UNION ALL SELECT 'webhooks', id, organization_id FROM webhook_endpoints WHERE id IN ${list(ids.webhooks)}
            UNION ALL SELECT 'boards', id, organization_id FROM boards WHERE id IN ${list(ids.boards)}
            UNION ALL SELECT 'posts', id, organization_id FROM posts WHERE id IN ${list(ids.posts)}
            UNION ALL SELECT 'updates', id, organization_id FROM updates WHERE id IN ${list(ids.updates)}`
      })

      const holders = SqlSchema.findAll({
        Request: Schema.Struct({ organizationId: Schema.String, slugs: Strings }),
        Result: Schema.Struct({ id: Schema.String, slug: Schema.String }),
        execute: ({ organizationId, slugs }) =>
          sql`SELECT id, slug FROM posts WHERE organization_id = ${organizationId}
            AND slug IN (SELECT jsonb_array_elements_text(${JSON.stringify(slugs)}::jsonb))`
      })

      const upsertOrganization = SqlSchema.void({
        Request: Schema.Struct({ id: Schema.String, name: Schema.String }),
        execute: ({ id, name }) =>
          sql`INSERT INTO organizations (id, name) VALUES (${id}, ${name})
            ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name`
      })

      // `xmax = 0`: the row was inserted, not updated.
      const upsertStatus = (status: StatusRow) =>
        upsertOutcome(
          sql,
          sql`INSERT INTO statuses (id, organization_id, name, is_default, position)
            VALUES (${status.id}, ${status.organizationId}, ${status.name}, ${status.isDefault}, ${status.position})
            ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, is_default = EXCLUDED.is_default, position = EXCLUDED.position
            WHERE statuses.organization_id = EXCLUDED.organization_id
              AND (statuses.name, statuses.is_default, statuses.position)
                IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.is_default, EXCLUDED.position)
            RETURNING (xmax = 0) AS inserted`,
          "statuses",
          status.id,
          status.organizationId
        )

      const undefault = SqlSchema.findAll({
        Request: Schema.Struct({ organizationId: Schema.String, defaultId: Schema.String, keep: Strings }),
        Result: Schema.Struct({ id: Schema.String }),
        execute: ({ defaultId, keep, organizationId }) =>
          sql`UPDATE statuses SET is_default = false
            WHERE organization_id = ${organizationId} AND id <> ${defaultId} AND is_default
              AND id NOT IN (SELECT jsonb_array_elements_text(${JSON.stringify(keep)}::jsonb))
            RETURNING id`
      })

      const upsertBoard = ({ createdAt, updatedAt, ...board }: BoardRow) =>
        upsertOutcome(
          sql,
          sql`INSERT INTO boards (id, organization_id, name, slug, visibility, created_at, updated_at)
            VALUES (${board.id}, ${board.organizationId}, ${board.name}, ${board.slug}, ${board.visibility},
              COALESCE(${createdAt}::timestamptz, now()), COALESCE(${updatedAt}::timestamptz, now()))
            ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, slug = EXCLUDED.slug, visibility = EXCLUDED.visibility,
              created_at = COALESCE(${createdAt}::timestamptz, boards.created_at),
              updated_at = COALESCE(${updatedAt}::timestamptz, boards.updated_at)
            WHERE boards.organization_id = EXCLUDED.organization_id
              AND (boards.name, boards.slug, boards.visibility, boards.created_at, boards.updated_at) IS DISTINCT FROM
                (EXCLUDED.name, EXCLUDED.slug, EXCLUDED.visibility,
                  COALESCE(${createdAt}::timestamptz, boards.created_at), COALESCE(${updatedAt}::timestamptz, boards.updated_at))
            RETURNING (xmax = 0) AS inserted`,
          "boards",
          board.id,
          board.organizationId
        )

      const postOwner = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: Schema.Struct({ organizationId: Schema.String }),
        execute: (id) => sql`SELECT organization_id AS "organizationId" FROM posts WHERE id = ${id}`
      })

      // A post already as the file says is not written, and counted as unchanged.
      const rewritePost = SqlSchema.findAll({
        Request: Schema.Struct({
          id: Schema.String,
          boardId: Schema.String,
          title: Schema.String,
          content: Schema.String,
          excerpt: Schema.String,
          visibility: Schema.Literals(["public", "private"]),
          statusId: Schema.String,
          lexicon: Schema.String,
          titleLexicon: Schema.String,
          slug: NullableString,
          createdAt: NullableString
        }),
        Result: Schema.Struct({ id: Schema.String }),
        execute: (post) =>
          sql`UPDATE posts SET board_id = ${post.boardId}, title = ${post.title}, content = ${post.content},
              excerpt = ${post.excerpt}, visibility = ${post.visibility}, status_id = ${post.statusId},
              lexicon = ${post.lexicon}::tsvector, title_lexicon = ${post.titleLexicon}::tsvector,
              slug = COALESCE(${post.slug}, slug),
              created_at = COALESCE(${post.createdAt}::timestamptz, created_at)
            WHERE id = ${post.id}
              AND (board_id, title, content, excerpt, visibility, status_id, lexicon, title_lexicon, slug, created_at) IS DISTINCT FROM
                (${post.boardId}, ${post.title}, ${post.content}, ${post.excerpt}, ${post.visibility}, ${post.statusId},
                  ${post.lexicon}::tsvector, ${post.titleLexicon}::tsvector, COALESCE(${post.slug}, slug),
                  COALESCE(${post.createdAt}::timestamptz, created_at))
            RETURNING id`
      })

      const upsertUpdate = (update: UpdateRow) => {
        const publishedGiven = update.publishedAt !== undefined
        const publishedAt = update.publishedAt ?? null
        return upsertOutcome(
          sql,
          sql`INSERT INTO updates (id, organization_id, title, slug, content, excerpt, image_url, published_at)
            VALUES (${update.id}, ${update.organizationId}, ${update.title}, ${update.slug}, ${update.content}, ${update.excerpt},
              ${update.imageUrl}, CASE WHEN ${publishedGiven} THEN ${publishedAt}::timestamptz ELSE now() END)
            ON CONFLICT (id) DO UPDATE SET title = EXCLUDED.title, slug = EXCLUDED.slug, content = EXCLUDED.content,
              excerpt = EXCLUDED.excerpt, image_url = EXCLUDED.image_url,
              published_at = CASE WHEN ${publishedGiven} THEN EXCLUDED.published_at ELSE updates.published_at END
            WHERE updates.organization_id = EXCLUDED.organization_id
              AND (updates.title, updates.slug, updates.content, updates.excerpt, updates.image_url, updates.published_at)
                IS DISTINCT FROM (EXCLUDED.title, EXCLUDED.slug, EXCLUDED.content, EXCLUDED.excerpt, EXCLUDED.image_url,
                  CASE WHEN ${publishedGiven} THEN EXCLUDED.published_at ELSE updates.published_at END)
            RETURNING (xmax = 0) AS inserted`,
          "updates",
          update.id,
          update.organizationId
        )
      }

      return ImportRepo.of({
        ownersOf: (ids) =>
          owners(ids).pipe(Effect.map((rows) => new Map(rows.map((row) => [`${row.kind} ${row.id}`, row.organizationId])))),
        slugHolders: (organizationId, slugs) =>
          holders({ organizationId, slugs }).pipe(Effect.map((rows) => new Map(rows.map((row) => [row.slug, row.id])))),
        upsertOrganization: (id, name) => upsertOrganization({ id, name }),
        upsertStatus,
        undefaultStatuses: (organizationId, defaultId, keep) =>
          undefault({ organizationId, defaultId, keep }).pipe(Effect.map((rows) => rows.length)),
        upsertBoard,
        postOwner: (id) => postOwner(id).pipe(Effect.map(Option.map((row) => row.organizationId))),
        rewritePost: (post) => rewritePost(post).pipe(Effect.map((rows) => rows.length > 0)),
        upsertUpdate
      })
    })
  )
}
