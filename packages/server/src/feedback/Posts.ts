import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { numberedSlug, slugify } from "../content/slug.js"
import { lexiconOf, type Lexicons } from "../lexicon/lexicon.js"
import { orDie } from "../sql/SqlFailure.js"

export interface NewPost {
  readonly id: string
  readonly organizationId: string
  readonly boardId: string
  readonly title: string
  /** Already sanitized. */
  readonly content: string
  /** The content as plain text: what suggestions search. */
  readonly text: string
  readonly excerpt: string
  readonly visibility: "public" | "private"
  readonly statusId: string | null
  readonly metadata: Readonly<Record<string, string>>
  readonly source: "widget" | "import"
  /** The identified contact, or null for an anonymous post. */
  readonly contactId: string | null
  /** An explicit slug; otherwise one is derived from the title. */
  readonly slug?: string | undefined
  /** A slug already claimed with `claimSlugs`, tried first; if it turns out taken, one is derived from the title. */
  readonly claimedSlug?: string | undefined
  readonly createdAt?: string | undefined
}

const InsertedPost = Schema.Struct({ slug: Schema.String, createdAt: Schema.String })

/** What of an imported post its slug depends on. */
export interface ImportedPost {
  readonly id: string
  readonly title: string
  readonly slug?: string | undefined
}

export interface ImportSlugs {
  /** The slug claimed for each new post without one, by post id. Posts that exist keep theirs. */
  readonly claimed: ReadonlyMap<string, string>
  /**
   * Puts back each counter the claim moved, unless another writer has moved it since (then the
   * numbers claimed stay unused): for an import refused after its claim, so that it leaves the
   * database as it found it.
   */
  readonly release: Effect.Effect<void>
}

const CounterRow = Schema.Struct({ base: Schema.String, last: Schema.Number })
const LastNumber = Schema.Struct({ last: Schema.Number })
const Slug = Schema.Struct({ slug: Schema.String })
const Strings = Schema.Array(Schema.String)

const LexiconSource = Schema.Struct({
  id: Schema.String,
  boardId: Schema.String,
  title: Schema.String,
  /** Sanitized HTML. */
  content: Schema.String,
  visibility: Schema.Literals(["public", "private"])
})
export type LexiconSource = typeof LexiconSource.Type
const IdRow = Schema.Struct({ id: Schema.String })

/** The columns of a new post, as `tryInsert` writes them. */
const PostColumns = Schema.Struct({
  id: Schema.String,
  organizationId: Schema.String,
  boardId: Schema.String,
  title: Schema.String,
  slug: Schema.String,
  content: Schema.String,
  excerpt: Schema.String,
  visibility: Schema.Literals(["public", "private"]),
  statusId: Schema.NullOr(Schema.String),
  /** The metadata as its JSON. */
  metadata: Schema.String,
  source: Schema.Literals(["widget", "import"]),
  contactId: Schema.NullOr(Schema.String),
  lexicon: Schema.String,
  titleLexicon: Schema.String,
  createdAt: Schema.NullOr(Schema.String)
})

/** `LIKE` pattern of `base-` followed by anything; slugs hold no `%` or `_`, but escape them anyway. */
const likePrefix = (base: string) => `${base.replace(/[\\%_]/g, "\\$&")}-%`

/** A slug whose number is taken (an explicit slug from a fixture) is retried with the next number, this many times. */
const slugAttempts = 20

export class Posts extends Context.Service<Posts, {
  /** The organization's status marked default, else its first one. */
  readonly defaultStatus: (organizationId: string) => Effect.Effect<Option.Option<string>>
  /** Inserts a post under a slug unique in its organization; yields the slug and `createdAt`. */
  readonly insert: (post: NewPost) => Effect.Effect<typeof InsertedPost.Type>
  /**
   * An import's slugs, claimed before its transaction and committed at once, each statement on its
   * own (decision 0020): the counters move past every explicit slug, and each new post without
   * one gets a slug of its title. Run outside a long transaction: a counter row stays locked
   * until the statement's transaction ends.
   */
  readonly claimImportSlugs: (organizationId: string, posts: ReadonlyArray<ImportedPost>) => Effect.Effect<ImportSlugs>
  /** Up to `limit` posts whose lexicon is not computed yet (written before it existed). */
  readonly missingLexicon: (limit: number) => Effect.Effect<ReadonlyArray<LexiconSource>>
  /** Stores computed lexicons (`tsvector` literals) by post id. */
  readonly setLexicons: (rows: ReadonlyArray<{ readonly id: string } & Lexicons>) => Effect.Effect<void>
}>()("hearken/Posts") {
  static readonly layer = Layer.effect(
    Posts,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const defaultStatus = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: IdRow,
        execute: (organizationId) =>
          sql`SELECT id FROM statuses WHERE organization_id = ${organizationId}
              ORDER BY is_default DESC, position, id LIMIT 1`
      })

      /** The highest number of `base` in use among the organization's posts (a scan of them: the slow path). */
      const highestInUse = (organizationId: string, base: string) =>
        sql`COALESCE((
          SELECT max(CASE WHEN slug = ${base} THEN 1 ELSE substr(slug, ${base.length + 2})::int END) FROM posts
          WHERE organization_id = ${organizationId}
            AND (slug = ${base} OR (slug LIKE ${likePrefix(base)} AND substr(slug, ${base.length + 2}) ~ '^[0-9]{1,9}$'))
        ), 0)`

      /**
       * Takes the next `count` numbers for `base` in the organization; yields the last of them.
       * One indexed row, whatever the number of posts sharing the title. The first time a base
       * is needed its counter starts from the highest number in use (posts from before the
       * counters, or imported with explicit slugs).
       */
      const bumpSlugCounter = SqlSchema.findAll({
        Request: Schema.Struct({ organizationId: Schema.String, base: Schema.String, count: Schema.Number }),
        Result: LastNumber,
        execute: ({ base, count, organizationId }) =>
          sql`WITH bumped AS (
            UPDATE slug_counters SET last = last + ${count}
            WHERE organization_id = ${organizationId} AND base = ${base}
            RETURNING last
          ), created AS (
            INSERT INTO slug_counters AS c (organization_id, base, last)
            SELECT ${organizationId}, ${base}, ${highestInUse(organizationId, base)} + ${count}
            WHERE NOT EXISTS (SELECT 1 FROM bumped)
            ON CONFLICT (organization_id, base) DO UPDATE SET last = c.last + ${count}
            RETURNING last
          )
          SELECT last FROM bumped UNION ALL SELECT last FROM created`
      })
      const nextSlugNumbers = (organizationId: string, base: string, count: number) =>
        bumpSlugCounter({ organizationId, base, count }).pipe(Effect.map((rows) => rows[0]!.last))

      /** Moves the counter of `base` to at least `n`. */
      const raiseSlugCounter = (organizationId: string, base: string, n: number) =>
        sql`WITH raised AS (
            UPDATE slug_counters SET last = GREATEST(last, ${n})
            WHERE organization_id = ${organizationId} AND base = ${base}
            RETURNING last
          )
          INSERT INTO slug_counters AS c (organization_id, base, last)
          SELECT ${organizationId}, ${base}, GREATEST(${highestInUse(organizationId, base)}, ${n})
          WHERE NOT EXISTS (SELECT 1 FROM raised)
          ON CONFLICT (organization_id, base) DO UPDATE SET last = GREATEST(c.last, EXCLUDED.last)`

      /** After a collision: another writer used numbers past the counter; move the counter past them. */
      const catchUpSlugCounter = (organizationId: string, base: string) =>
        sql`UPDATE slug_counters SET last = GREATEST(last, ${highestInUse(organizationId, base)})
          WHERE organization_id = ${organizationId} AND base = ${base}`

      /** No row when the slug is taken in the organization. */
      const insertRow = SqlSchema.findOneOption({
        Request: PostColumns,
        Result: InsertedPost,
        execute: (post) =>
          sql`INSERT INTO posts
              (id, organization_id, board_id, title, slug, content, excerpt, visibility, status_id, metadata, source,
               contact_id, lexicon, title_lexicon, created_at, updated_at)
            VALUES (${post.id}, ${post.organizationId}, ${post.boardId}, ${post.title}, ${post.slug}, ${post.content},
              ${post.excerpt}, ${post.visibility}, ${post.statusId}, ${post.metadata}::jsonb, ${post.source},
              ${post.contactId}, ${post.lexicon}::tsvector, ${post.titleLexicon}::tsvector,
              COALESCE(${post.createdAt}::timestamptz, now()), COALESCE(${post.createdAt}::timestamptz, now()))
            ON CONFLICT (organization_id, slug) DO NOTHING
            RETURNING slug, iso_ms(created_at) AS "createdAt"`
      })
      const tryInsert = (post: NewPost, slug: string, lexicons: Lexicons) =>
        insertRow({
          id: post.id,
          organizationId: post.organizationId,
          boardId: post.boardId,
          title: post.title,
          slug,
          content: post.content,
          excerpt: post.excerpt,
          visibility: post.visibility,
          statusId: post.statusId,
          metadata: JSON.stringify(post.metadata),
          source: post.source,
          contactId: post.contactId,
          lexicon: lexicons.lexicon,
          titleLexicon: lexicons.titleLexicon,
          createdAt: post.createdAt ?? null
        }).pipe(Effect.map(Option.getOrUndefined))

      const insert = Effect.fn("Posts.insert")(function*(post: NewPost) {
        const lexicons = lexiconOf(post)
        if (post.slug !== undefined) {
          const row = yield* tryInsert(post, post.slug, lexicons)
          if (row === undefined) return yield* Effect.die(new Error(`slug ${post.slug} is taken`))
          return row
        }
        if (post.claimedSlug !== undefined) {
          const row = yield* tryInsert(post, post.claimedSlug, lexicons)
          if (row !== undefined) return row
        }
        const base = slugify(post.title)
        for (let attempt = 0; attempt < slugAttempts; attempt++) {
          const slug = numberedSlug(base, yield* nextSlugNumbers(post.organizationId, base, 1))
          const row = yield* tryInsert(post, slug, lexicons)
          if (row !== undefined) return row
          yield* catchUpSlugCounter(post.organizationId, base)
        }
        return yield* Effect.die(new Error(`no free slug for ${base} after ${slugAttempts} attempts`))
      }, orDie)

      const slugsTaken = SqlSchema.findAll({
        Request: Schema.Struct({ organizationId: Schema.String, slugs: Strings }),
        Result: Slug,
        execute: ({ organizationId, slugs }) =>
          sql`SELECT slug FROM posts
            WHERE organization_id = ${organizationId}
              AND slug IN (SELECT jsonb_array_elements_text(${JSON.stringify(slugs)}::jsonb))`
      })

      /** `count` free slugs numbered from `base` (`slugify` of a title), in order; the counter is moved past them. */
      const claimSlugs = Effect.fnUntraced(function*(organizationId: string, base: string, count: number) {
        const claimed: Array<string> = []
        for (let attempt = 0; claimed.length < count; attempt++) {
          if (attempt === slugAttempts) return yield* Effect.die(new Error(`no free slugs for ${base} after ${slugAttempts} attempts`))
          const wanted = count - claimed.length
          const last = yield* nextSlugNumbers(organizationId, base, wanted)
          const slugs = Array.from({ length: wanted }, (_, i) => numberedSlug(base, last - wanted + 1 + i))
          const taken = yield* slugsTaken({ organizationId, slugs })
          if (taken.length > 0) yield* catchUpSlugCounter(organizationId, base)
          const takenSlugs = new Set(taken.map((row) => row.slug))
          claimed.push(...slugs.filter((slug) => !takenSlugs.has(slug)))
        }
        return claimed
      })

      /** `base-n` (n ≥ 2, as `numberedSlug` writes it) is number n of `base`; any slug is number 1 of itself. */
      const numberedPattern = /^(.+)-([1-9][0-9]{0,8})$/

      /** The counters an explicit slug moves: its own, and that of the base it numbers. */
      const countersOf = (slug: string) => {
        const numbered = numberedPattern.exec(slug)
        return numbered !== null && Number(numbered[2]) >= 2
          ? [{ base: slug, n: 1 }, { base: numbered[1]!, n: Number(numbered[2]) }]
          : [{ base: slug, n: 1 }]
      }

      const counterValues = (organizationId: string, bases: ReadonlyArray<string>) =>
        SqlSchema.findAll({
          Request: Schema.Array(Schema.String),
          Result: CounterRow,
          execute: (bases) =>
            sql`SELECT base, last FROM slug_counters WHERE organization_id = ${organizationId}
              AND base IN (SELECT jsonb_array_elements_text(${JSON.stringify(bases)}::jsonb))`
        })(bases).pipe(Effect.map((rows) => new Map(rows.map((row) => [row.base, row.last]))))

      /** Each counter back to `before` (none: no row) if it still reads `after`, in one statement. */
      const restoreCounters = (
        organizationId: string,
        moved: ReadonlyArray<{ readonly base: string; readonly before: number | null; readonly after: number }>
      ) =>
        moved.length === 0 ? Effect.void : sql`WITH moved AS (
            SELECT * FROM jsonb_to_recordset(${JSON.stringify(moved)}::jsonb) AS m(base text, before integer, after integer)
          ), removed AS (
            DELETE FROM slug_counters c USING moved m
            WHERE c.organization_id = ${organizationId} AND c.base = m.base AND c.last = m.after AND m.before IS NULL
          )
          UPDATE slug_counters c SET last = m.before FROM moved m
          WHERE c.organization_id = ${organizationId} AND c.base = m.base AND c.last = m.after AND m.before IS NOT NULL`.pipe(
          Effect.asVoid
        )

      const existingPosts = SqlSchema.findAll({
        Request: Strings,
        Result: IdRow,
        execute: (ids) =>
          sql`SELECT id FROM posts WHERE id IN (SELECT jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))`
      })

      const claimImportSlugs = Effect.fn("Posts.claimImportSlugs")(function*(organizationId: string, posts: ReadonlyArray<ImportedPost>) {
        // Each counter's value before its first move (null: no row yet), read just before it.
        const before = new Map<string, number | null>()
        const remember = Effect.fnUntraced(function*(bases: ReadonlyArray<string>) {
          const fresh = [...new Set(bases)].filter((base) => !before.has(base))
          if (fresh.length === 0) return
          const values = yield* counterValues(organizationId, fresh)
          for (const base of fresh) before.set(base, values.get(base) ?? null)
        })
        /** Moves the counters past an explicit slug, so that no post derives it from its title. */
        const reserve = Effect.fnUntraced(function*(slug: string) {
          const counters = countersOf(slug)
          yield* remember(counters.map((counter) => counter.base))
          for (const { base, n } of counters) yield* raiseSlugCounter(organizationId, base, n)
        })

        for (const post of posts) if (post.slug !== undefined) yield* reserve(post.slug)
        const derived = posts.filter((post) => post.slug === undefined)
        const existing = yield* existingPosts(derived.map((post) => post.id))
        const known = new Set(existing.map((row) => row.id))
        const byBase = new Map<string, Array<ImportedPost>>()
        for (const post of derived) {
          if (known.has(post.id)) continue
          const base = slugify(post.title)
          byBase.set(base, [...byBase.get(base) ?? [], post])
        }
        const claimed = new Map<string, string>()
        for (const [base, group] of byBase) {
          yield* remember([base])
          const slugs = yield* claimSlugs(organizationId, base, group.length)
          group.forEach((post, i) => claimed.set(post.id, slugs[i]!))
          // `dark-mode-2` is also what the title "Dark mode 2" derives first: reserved under that
          // reading too, so such a post neither waits on the import's row nor takes the slug first.
          for (const slug of slugs) if (slug !== base) yield* reserve(slug)
        }

        const after = yield* counterValues(organizationId, [...before.keys()])
        const moved = [...before].flatMap(([base, was]) => {
          const now = after.get(base)
          return now === undefined || now === was ? [] : [{ base, before: was, after: now }]
        })
        return { claimed, release: restoreCounters(organizationId, moved).pipe(orDie) } satisfies ImportSlugs
      }, orDie)

      const withoutLexicon = SqlSchema.findAll({
        Request: Schema.Number,
        Result: LexiconSource,
        execute: (limit) =>
          sql`SELECT id, board_id AS "boardId", title, content, visibility FROM posts
            WHERE lexicon IS NULL ORDER BY id LIMIT ${limit}`
      })
      const missingLexicon = Effect.fn("Posts.missingLexicon")((limit: number) => withoutLexicon(limit).pipe(orDie))

      // Only rows still missing theirs: an import that rewrote a post meanwhile has written the right one.
      const setLexicons = Effect.fn("Posts.setLexicons")(
        (rows: ReadonlyArray<{ readonly id: string } & Lexicons>) =>
          sql`UPDATE posts SET lexicon = l.lexicon::tsvector, title_lexicon = l."titleLexicon"::tsvector
            FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS l(id text, lexicon text, "titleLexicon" text)
            WHERE posts.id = l.id AND posts.lexicon IS NULL`.pipe(Effect.asVoid, orDie)
      )

      return Posts.of({
        missingLexicon,
        setLexicons,
        defaultStatus: Effect.fn("Posts.defaultStatus")((organizationId: string) =>
          defaultStatus(organizationId).pipe(Effect.map(Option.map((row) => row.id)), orDie)
        ),
        insert,
        claimImportSlugs
      })
    })
  )
}
