/**
 * Synthetic boards for the suggestion benches (`speed.ts`, `vector.ts`): one
 * public board filled with posts whose words are drawn, Zipf-distributed, from
 * a vocabulary of 60,000: the labelled set's own words (six languages) as the
 * most common ones, then made-up rarer words (halves of two real ones), so
 * that a larger board uses more distinct words, as real text does (Heaps'
 * law).
 *
 * The posts are inserted with SQL, their lexicon computed by the server's own
 * function, so that filling 100k posts takes seconds and 1M minutes, not an
 * import.
 */
import { Effect } from "effect"
import pg from "pg"
import { lexiconOf } from "../../packages/server/dist/lexicon/lexicon.js"
import { withSql } from "../support.ts"
import type { Dataset } from "../../test/support/dataset.ts"

export const organizationId = "org_bench"
export const boardId = "b_bench"

/** A fill of this many posts or more drops the GIN indexes first and builds them after the load. */
export const dropIndexesFrom = 50_000

/** A post as inserted: its content is `<p>${text}</p>`. */
export interface SyntheticPost {
  readonly id: string
  readonly title: string
  /** The plain text of the content. */
  readonly text: string
}

/** The organization, its default status and the public board the posts go to (the schema must exist). */
export const createBoard = (url: string) =>
  withSql(url, (sql) =>
    Effect.all([
      sql`INSERT INTO organizations (id, name) VALUES (${organizationId}, 'Bench')`,
      sql`INSERT INTO statuses (id, organization_id, name, is_default, position) VALUES ('st_bench', ${organizationId}, 'Open', true, 0)`,
      sql`INSERT INTO boards (id, organization_id, name, slug, visibility) VALUES (${boardId}, ${organizationId}, 'Bench', 'bench', 'public')`
    ], { discard: true })
  )

/** The post generator for a labelled set's words. */
export const synthetic = (dataset: Dataset) => {
  /** Words of the labelled posts, with their counts; CJK text is kept as 2-character pieces. */
  const vocabulary = (() => {
    const counts = new Map<string, number>()
    for (const post of dataset.posts) {
      const text = `${post.title} ${post.content.replace(/<[^>]+>/g, " ")}`
      for (const word of text.match(/[\p{L}\p{N}]+/gu) ?? []) {
        const pieces = /\p{Script=Han}|\p{Script=Hiragana}|\p{Script=Katakana}/u.test(word) ? word.match(/.{1,2}/gu) ?? [] : [word]
        for (const piece of pieces) counts.set(piece, (counts.get(piece) ?? 0) + 1)
      }
    }
    const real = [...counts.entries()].sort((a, b) => b[1] - a[1]).map(([w]) => w)
    const latin = real.filter((w) => /^[a-z]{5,}$/i.test(w))
    const rare = new Set<string>()
    while (real.length + rare.size < 60_000) {
      const a = latin[Math.floor(Math.random() * latin.length)]!
      const b = latin[Math.floor(Math.random() * latin.length)]!
      rare.add(a.slice(0, Math.ceil(a.length / 2)) + b.slice(Math.floor(b.length / 2)))
    }
    return [...real, ...rare]
  })()

  /** Zipf over the vocabulary (s = 1), so common words are common and rare ones rare, as in real boards. */
  const zipf = (() => {
    const weights = vocabulary.map((_, i) => 1 / (i + 1))
    const total = weights.reduce((a, b) => a + b, 0)
    const cumulative: Array<number> = []
    let acc = 0
    for (const w of weights) cumulative.push((acc += w / total))
    return () => {
      const r = Math.random()
      let lo = 0
      let hi = cumulative.length - 1
      while (lo < hi) {
        const mid = (lo + hi) >> 1
        if (cumulative[mid]! < r) lo = mid + 1
        else hi = mid
      }
      return vocabulary[lo]!
    }
  })()

  const sentence = (min: number, max: number) =>
    Array.from({ length: min + Math.floor(Math.random() * (max - min + 1)) }, zipf).join(" ")

  /** Posts `p_bench_<start>` to `p_bench_<start + count − 1>`, with their lexicon computed by the server's own function. */
  const generate = (start: number, count: number) =>
    Array.from({ length: count }, (_, i) => {
      const id = `p_bench_${start + i}`
      const title = sentence(3, 8)
      const text = `${sentence(12, 30)}. ${sentence(8, 20)}.`
      return {
        id,
        title,
        text,
        content: `<p>${text}</p>`,
        excerpt: text.slice(0, 280),
        ...lexiconOf({ boardId, title, text, visibility: "public" }),
        createdAt: new Date(Date.UTC(2024, 10, 1) + Math.random() * 730 * 86_400_000).toISOString()
      }
    })

  /**
   * Inserts posts `p_bench_<from>` to `p_bench_<to − 1>`, 5,000 a statement
   * (columns as arrays, `unnest`ed: no JSON to parse), then VACUUM ANALYZE.
   * One connection; the next batch is generated while the last is inserted,
   * so the two cores share the work. A fill of `dropIndexesFrom` posts or
   * more drops the GIN indexes on `posts` first and builds them again after
   * the load, with the definitions and settings they had: one build is many
   * times cheaper than a million posts' index updates. `inserted` is called
   * with each batch once it is in. Resolves to the seconds it took.
   */
  const fill = async (
    url: string,
    from: number,
    to: number,
    inserted?: (posts: ReadonlyArray<SyntheticPost>) => Promise<void>
  ) => {
    const started = performance.now()
    const batch = 5_000
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      const gin = to - from >= dropIndexesFrom
        ? (await client.query<{ name: string; definition: string }>(`SELECT indexname AS name, indexdef AS definition FROM pg_indexes
            WHERE schemaname = current_schema() AND tablename = 'posts' AND indexdef LIKE '%USING gin%'`)).rows
        : []
      for (const { name } of gin) await client.query(`DROP INDEX ${name}`)
      let pending: Promise<unknown> = Promise.resolve()
      for (let start = from; start < to; start += batch) {
        const rows = generate(start, Math.min(batch, to - start))
        await pending
        const column = <K extends keyof (typeof rows)[number]>(key: K) => rows.map((row) => row[key])
        pending = client.query(
          `INSERT INTO posts (id, organization_id, board_id, title, slug, content, excerpt, visibility, status_id, source, lexicon,
              title_lexicon, created_at, updated_at)
            SELECT r.id, $1, $2, r.title, r.id, r.content, r.excerpt, 'public', 'st_bench', 'import',
              r.lexicon::tsvector, r.title_lexicon::tsvector, r.created_at, r.created_at
            FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::timestamptz[])
              AS r(id, title, content, excerpt, lexicon, title_lexicon, created_at)`,
          [organizationId, boardId, column("id"), column("title"), column("content"), column("excerpt"), column("lexicon"),
            column("titleLexicon"), column("createdAt")]
        ).then(() => inserted?.(rows))
      }
      await pending
      if (gin.length > 0) {
        await client.query("SET maintenance_work_mem = '1GB'")
        // `indexdef` has the storage parameters too (`gin_pending_list_limit`, migration 0010).
        for (const { definition } of gin) await client.query(definition)
      }
      await client.query("VACUUM ANALYZE posts")
    } finally {
      await client.end()
    }
    return (performance.now() - started) / 1000
  }

  return { fill }
}

/** One `POST /suggestions` for `draft` on the synthetic board of the server at `origin`: its latency in ms and its status. */
export const timeSuggestion = async (origin: string, draft: { readonly title: string; readonly content: string }) => {
  const started = performance.now()
  const res = await fetch(`${origin}/api/widget/v1/suggestions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ organizationId, boardId, title: draft.title, content: draft.content })
  })
  await res.arrayBuffer()
  return { ms: performance.now() - started, status: res.status }
}
