/**
 * The bench's data (bench/load/main.ts describes it) and how it is seeded:
 * the organizations and their boards, generated posts, changelog entries and
 * POST /feedback bodies, written by SQL after the server's migrations.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { make as makeSanitizer, truncate } from "../../packages/server/dist/content/Sanitizer.js"
import { slugify } from "../../packages/server/dist/content/slug.js"
import { excerptLength } from "../../packages/server/dist/feedback/Feedback.js"
import { lexiconOf } from "../../packages/server/dist/lexicon/lexicon.js"
import { migrate } from "../../packages/server/dist/sql/Database.js"
import { loadDataset } from "../../test/support/dataset.ts"
import { withSql } from "../support.ts"

export const organizations = [{ id: "org_bench_1", name: "Acme" }, { id: "org_bench_2", name: "Globex" }] as const
export type Organization = (typeof organizations)[number]

const boardNames: ReadonlyArray<readonly [string, "public" | "private"]> = [
  ["Feature requests", "public"], ["Bug reports", "public"], ["Integrations", "public"], ["Mobile app", "public"],
  ["API", "public"], ["Billing", "public"], ["Design", "public"], ["Performance", "public"],
  ["Internal roadmap", "private"], ["Security reports", "private"]
]
const boardsOf = (org: Organization) =>
  boardNames.map(([name, visibility], i) => ({ id: `${org.id}_b${i}`, name, slug: slugify(name), visibility }))
const publicBoardsOf = (org: Organization) => boardsOf(org).filter((b) => b.visibility === "public")
const statusSuffixes = ["_st_review", "_st_open", "_st_planned", "_st_done"]

/** What many customers ask for, in the words they use: these titles repeat most. */
export const commonTitles = [
  "Dark mode", "Export to CSV", "Single sign-on (SSO)", "Slack integration", "Mobile app", "API access",
  "Custom domain", "Two-factor authentication", "Zapier integration", "Bulk edit", "Keyboard shortcuts",
  "Calendar view", "Jira integration", "Custom fields", "Email notifications", "Multi-language support",
  "Offline mode", "Webhooks", "Audit log", "Recurring tasks"
]

/** Distinct posts per organization at most; a larger organization cycles over them. */
export const maxTemplates = 10_000

export interface PostTemplate {
  readonly title: string
  readonly content: string
  readonly text: string
  readonly excerpt: string
  readonly base: string
  /** How many earlier templates have the same slug base, and how many have it in all. */
  rank: number
  count: number
}

export interface UpdateTemplate {
  readonly headline: string
  readonly html: string
  readonly excerpt: string
}

/**
 * The generator of one run: it reads the labelled set and writes the 40
 * changelog templates when made, then draws everything else from the same
 * deterministic sequence (mulberry32), so that two runs load the same data.
 * Make one per run, before anything else draws from it.
 */
export const makeData = () => {
  let state = 0x5eed
  const random = () => {
    state = (state + 0x6d2b79f5) | 0
    let t = Math.imul(state ^ (state >>> 15), 1 | state)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const pick = <A>(items: ReadonlyArray<A>) => items[Math.floor(random() * items.length)]!

  const dataset = loadDataset()
  const sanitizer = makeSanitizer()

  const zipfCommon = (() => {
    const weights = commonTitles.map((_, i) => 1 / (i + 1))
    const total = weights.reduce((a, b) => a + b, 0)
    return () => {
      let r = random() * total
      for (let i = 0; i < weights.length; i++) if ((r -= weights[i]!) <= 0) return commonTitles[i]!
      return commonTitles[0]!
    }
  })()
  // A title whose slug ends in -N could collide with another title's Nth slug: left out of the generated posts.
  const datasetTitles = dataset.posts.map((p) => p.title).filter((t) => !/-\d+$/.test(slugify(t)))
  const title = (commonShare: number) => (random() < commonShare ? zipfCommon() : pick(datasetTitles))

  const paragraphs = dataset.posts.map((p) => p.content)
  const words = paragraphs.join(" ").replace(/<[^>]+>/g, " ").split(/\s+/).filter((w) => /^\p{L}{4,}$/u.test(w))
  const phrase = (n: number) => Array.from({ length: n }, () => pick(words)).join(" ")

  /** A post body as a visitor writes it: the labelled set's texts, sometimes a list or a link. */
  const postBody = () => {
    const parts = Array.from({ length: 1 + Math.floor(random() * 3) }, () => pick(paragraphs))
    if (random() < 0.3) parts.push(`<ul><li>${phrase(4)}</li><li>${phrase(6)}</li><li>${phrase(3)}</li></ul>`)
    if (random() < 0.2) parts.push(`<p>See <a href="https://example.com/${phrase(1)}">${phrase(2)}</a>.</p>`)
    return parts.join("")
  }

  /** A body from a widget: as above, with what the sanitizer must strip. */
  const dirtyBody = () => {
    const body = postBody()
    const r = random()
    if (r < 0.15) return `${body}<script>alert(1)</script>`
    if (r < 0.3) return `${body}<p onclick="steal()">${phrase(5)} <a href="javascript:alert(1)">here</a></p>`
    if (r < 0.4) return `${body}<img src="https://example.com/x.png" onerror="alert(1)"><style>p{color:red}</style>`
    return body
  }

  /** Changelog HTML as an editor writes it (40 templates); each entry adds its own release line. */
  const updateTemplates: ReadonlyArray<UpdateTemplate> = Array.from({ length: 40 }, (_, i) => {
    const headline = `${pick(commonTitles)}: ${phrase(3)}`
    const html = [
      `<h2>${headline}</h2>`,
      ...Array.from({ length: 2 + (i % 4) }, () => pick(paragraphs)),
      `<h3>What changed</h3><ul>${Array.from({ length: 3 + (i % 5) }, () => `<li><strong>${phrase(2)}</strong> ${phrase(8)}</li>`).join("")}</ul>`,
      i % 3 === 0 ? `<p><img src="https://cdn.example.com/updates/${i}.png" alt="${phrase(3)}"></p>` : "",
      i % 4 === 0 ? `<table><tr><th>Plan</th><th>Limit</th></tr><tr><td>Pro</td><td>${i * 10}</td></tr></table>` : "",
      i % 5 === 0 ? `<p onmouseover="track()">${phrase(10)} <a href="javascript:void(0)">more</a></p><script>track()</script>` : "",
      i % 7 === 0 ? `<iframe src="https://video.example.com/${i}"></iframe><div data-x="1" style="color:red">${phrase(12)}</div>` : "",
      `<p>Read the <a href="https://docs.example.com/${i}" target="_blank">docs</a> or <em>reply</em> to this update.</p>`
    ].join("\n")
    return { headline, html, excerpt: truncate(sanitizer.text(html), excerptLength) }
  })

  const postTemplates = (n: number): ReadonlyArray<PostTemplate> => {
    const templates = Array.from({ length: n }, () => {
      const t = title(0.3)
      const content = sanitizer.post(postBody())
      const text = sanitizer.text(content)
      return { title: t, content, text, excerpt: truncate(text, excerptLength), base: slugify(t), rank: 0, count: 0 }
    })
    const counts = new Map<string, number>()
    for (const t of templates) {
      t.rank = counts.get(t.base) ?? 0
      counts.set(t.base, t.rank + 1)
    }
    for (const t of templates) t.count = counts.get(t.base)!
    return templates
  }

  /** JSON bodies for every public board of `orgs` in turn, the rest of each from `fields(i)`. */
  const onPublicBoards = (orgs: ReadonlyArray<Organization>, n: number, fields: (i: number) => Record<string, unknown>) =>
    Array.from({ length: n }, (_, i) => {
      const org = orgs[i % orgs.length]!
      const boards = publicBoardsOf(org)
      return JSON.stringify({ organizationId: org.id, boardId: boards[Math.floor(i / orgs.length) % boards.length]!.id, ...fields(i) })
    })

  /**
   * POST /feedback bodies: every public board of `orgs` in turn, titles from
   * `titleOf` (by default half from the common ones), dirty HTML, metadata.
   */
  const feedbackBodies = (orgs: ReadonlyArray<Organization>, n = 500, titleOf = (_: number) => title(0.5)) =>
    onPublicBoards(orgs, n, (i) => ({
      title: titleOf(i),
      content: dirtyBody(),
      metadata: { page: `/app/${pick(["settings", "reports", "inbox", "billing"])}`, plan: pick(["free", "pro", "enterprise"]) }
    }))

  /** Drafts for POST /suggestions: a title as visitors write them and the start of a body. */
  const suggestionBodies = (orgs: ReadonlyArray<Organization>, n = 500) =>
    onPublicBoards(orgs, n, () => ({ title: title(0.5), content: pick(paragraphs).replace(/<[^>]+>/g, " ").slice(0, 400) }))

  return { zipfCommon, updateTemplates, postTemplates, feedbackBodies, suggestionBodies }
}

export type Data = ReturnType<typeof makeData>

// ---------------------------------------------------------------- seeding

const sqlJson = (rows: unknown) => JSON.stringify(rows)

export const seedOrganizations = (url: string) =>
  withSql(url, (sql) =>
    Effect.gen(function*() {
      yield* Effect.provideService(migrate, SqlClient.SqlClient, sql)
      for (const org of organizations) {
        yield* sql`INSERT INTO organizations (id, name) VALUES (${org.id}, ${org.name})`
        const statuses = ["Under review", "Open", "Planned", "Done"].map((name, i) => ({
          id: org.id + statusSuffixes[i]!, name, isDefault: i === 1, position: i
        }))
        yield* sql`INSERT INTO statuses (id, organization_id, name, is_default, position)
          SELECT s.id, ${org.id}, s.name, s."isDefault", s.position
          FROM jsonb_to_recordset(${sqlJson(statuses)}::jsonb) AS s(id text, name text, "isDefault" boolean, position int)`
        yield* sql`INSERT INTO boards (id, organization_id, name, slug, visibility, created_at, updated_at)
          SELECT b.id, ${org.id}, b.name, b.slug, b.visibility, now() - (b.n || ' days')::interval, now() - (b.n || ' hours')::interval
          FROM jsonb_to_recordset(${sqlJson(boardsOf(org).map((b, i) => ({ ...b, n: 100 - i })))}::jsonb)
            AS b(id text, name text, slug text, visibility text, n int)`
      }
      yield* sql`CREATE UNLOGGED TABLE bench_post_templates (
        organization_id text, k int, board_id text, visibility text, title text, content text, excerpt text,
        lexicon text, title_lexicon text, base text, rank int, count int, PRIMARY KEY (organization_id, k))`
    })
  )

/** Stores the templates of `org`'s posts: template k goes to board k mod 10, its lexicon by the server's function. */
export const storeTemplates = async (url: string, org: Organization, templates: ReadonlyArray<PostTemplate>) => {
  const boards = boardsOf(org)
  for (let start = 0; start < templates.length; start += 1_000) {
    const rows = templates.slice(start, start + 1_000).map((t, i) => {
      const k = start + i
      const board = boards[k % boards.length]!
      const lexicons = lexiconOf({ boardId: board.id, title: t.title, text: t.text, visibility: board.visibility })
      return {
        k, board: board.id, visibility: board.visibility, title: t.title, content: t.content, excerpt: t.excerpt,
        lexicon: lexicons.lexicon, titleLexicon: lexicons.titleLexicon, base: t.base, rank: t.rank, count: t.count
      }
    })
    await withSql(url, (sql) =>
      sql`INSERT INTO bench_post_templates
        SELECT ${org.id}, t.k, t.board, t.visibility, t.title, t.content, t.excerpt, t.lexicon, t."titleLexicon", t.base, t.rank, t.count
        FROM jsonb_to_recordset(${sqlJson(rows)}::jsonb) AS t(k int, board text, visibility text, title text, content text,
          excerpt text, lexicon text, "titleLexicon" text, base text, rank int, count int)`
    )
  }
}

/**
 * Posts `from` to `to − 1` of `org`, in one statement: post g is template g
 * mod P; its slug is the template's base, numbered as the server's
 * allocation would have numbered it (`base`, `base-2`, …). A number the
 * server gave meanwhile (`--growth` posts between fills) is skipped. The
 * organization's slug counters are dropped, so that the server starts each
 * again from the highest number in use, as after an import.
 */
export const fillPosts = (url: string, org: Organization, templateCount: number, from: number, to: number) =>
  withSql(url, (sql) =>
    Effect.gen(function*() {
      if (to > from) {
        yield* sql`INSERT INTO posts (id, organization_id, board_id, title, slug, content, excerpt, visibility, status_id,
            source, lexicon, title_lexicon, created_at, updated_at)
          SELECT ${org.id} || '_p' || g, ${org.id}, t.board_id, t.title,
            CASE WHEN o.occ = 0 THEN t.base ELSE t.base || '-' || (o.occ + 1) END,
            t.content, t.excerpt, t.visibility,
            ${org.id} || (ARRAY['_st_review', '_st_open', '_st_planned', '_st_done'])[1 + g % 4],
            'import', t.lexicon::tsvector, t.title_lexicon::tsvector, o.at, o.at
          FROM generate_series(${from}::int, ${to - 1}::int) AS g
          JOIN bench_post_templates t ON t.organization_id = ${org.id} AND t.k = g % ${templateCount}::int
          CROSS JOIN LATERAL (
            SELECT (g / ${templateCount}::int) * t.count + t.rank AS occ,
              timestamptz '2024-01-01T00:00:00Z' + g * interval '30 seconds' AS at
          ) o
          ON CONFLICT (organization_id, slug) DO NOTHING`
        yield* sql`DELETE FROM slug_counters WHERE organization_id = ${org.id}`
      }
      yield* sql`VACUUM ANALYZE posts`
    })
  )

/**
 * Changelog entries `from` to `to − 1` of `org`: template g mod 40 with its
 * own release line, so every entry's HTML is distinct. With `unpublished`, 1
 * in 20 is a draft and 1 in 20 scheduled in the future.
 */
export const fillUpdates = (
  url: string,
  updateTemplates: ReadonlyArray<UpdateTemplate>,
  org: Organization,
  from: number,
  to: number,
  unpublished: boolean
) =>
  withSql(url, (sql) =>
    Effect.gen(function*() {
      const templates = updateTemplates.map((t, k) => ({ k, ...t, slug: slugify(t.headline) }))
      yield* sql`INSERT INTO updates (id, organization_id, title, slug, content, excerpt, image_url, published_at, created_at)
        SELECT ${org.id} || '_u' || g, ${org.id}, t.headline || ' (' || g || ')', t.slug || '-' || g,
          '<p class="release">Release ' || (g / 10) || '.' || (g % 10) || '</p>' || t.html, t.excerpt,
          CASE WHEN g % 3 = 0 THEN 'https://cdn.example.com/covers/' || g || '.png' END,
          CASE WHEN ${unpublished} AND g % 20 = 9 THEN NULL
               WHEN ${unpublished} AND g % 20 = 19 THEN now() + interval '7 days'
               ELSE now() - (g + 1) * interval '7 hours' END,
          now() - (g + 2) * interval '7 hours'
        FROM generate_series(${from}::int, ${to - 1}::int) AS g
        JOIN jsonb_to_recordset(${sqlJson(templates)}::jsonb) AS t(k int, headline text, slug text, html text, excerpt text)
          ON t.k = g % ${templates.length}::int`
      yield* sql`VACUUM ANALYZE updates`
    })
  )

/**
 * The load, soak and observability modes' data: the organizations, then
 * `postsPerOrg[i]` posts and `updatesPerOrg[i]` changelog entries (some
 * unpublished) in organization i.
 */
export const seed = async (data: Data, url: string, postsPerOrg: ReadonlyArray<number>, updatesPerOrg: ReadonlyArray<number>) => {
  const started = performance.now()
  await seedOrganizations(url)
  const templates = data.postTemplates(Math.max(1, Math.min(maxTemplates, Math.max(...postsPerOrg))))
  for (const [i, org] of organizations.entries()) {
    const count = Math.min(templates.length, postsPerOrg[i]!)
    await storeTemplates(url, org, templates.slice(0, Math.max(1, count)))
    await fillPosts(url, org, Math.max(1, count), 0, postsPerOrg[i]!)
    await fillUpdates(url, data.updateTemplates, org, 0, updatesPerOrg[i]!, true)
  }
  return { seconds: (performance.now() - started) / 1000, templates }
}

/** `n` split over the two organizations: the first gets the odd one. */
export const half = (n: number) => [Math.ceil(n / 2), Math.floor(n / 2)]
