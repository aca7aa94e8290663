/**
 * Synthetic boards for the suggestion benches (`speed.ts`, `vector.ts`): one
 * public board filled with posts whose words are drawn, Zipf-distributed, from
 * a vocabulary of 60,000: the labelled set's own words (six languages) as the
 * most common ones, then made-up rarer words (halves of two real ones), so
 * that a larger board uses more distinct words, as real text does (Heaps'
 * law).
 *
 * The posts are inserted with SQL, their lexicon computed by the server's own
 * function, so that filling 100k posts takes seconds, not an import.
 */
import { Effect } from "effect"
import { lexiconOf } from "../../packages/server/dist/lexicon/lexicon.js"
import { withSql } from "../support.ts"
import type { Dataset } from "./dataset.ts"

export const organizationId = "org_bench"
export const boardId = "b_bench"

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

  /**
   * Inserts posts `p_bench_<from>` to `p_bench_<to − 1>`, 2,000 a statement,
   * then VACUUM ANALYZE. `inserted` is called with each batch once it is in.
   */
  const fill = async (
    url: string,
    from: number,
    to: number,
    inserted?: (posts: ReadonlyArray<SyntheticPost>) => Promise<void>
  ) => {
    const batch = 2_000
    for (let start = from; start < to; start += batch) {
      const rows = Array.from({ length: Math.min(batch, to - start) }, (_, i) => {
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
          created_at: new Date(Date.UTC(2024, 10, 1) + Math.random() * 730 * 86_400_000).toISOString()
        }
      })
      await withSql(url, (sql) =>
        sql`INSERT INTO posts (id, organization_id, board_id, title, slug, content, excerpt, visibility, status_id, source, lexicon,
            title_lexicon, created_at, updated_at)
          SELECT r.id, ${organizationId}, ${boardId}, r.title, r.id, r.content, r.excerpt, 'public', 'st_bench', 'import',
            r.lexicon::tsvector, r."titleLexicon"::tsvector, r.created_at, r.created_at
          FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
            AS r(id text, title text, content text, excerpt text, lexicon text, "titleLexicon" text, created_at timestamptz)`
      )
      if (inserted) await inserted(rows)
    }
    await withSql(url, (sql) => sql`VACUUM ANALYZE posts`)
  }

  return { fill }
}

/** One `POST /suggestions` for `draft` on the synthetic board of the server at `origin`: its latency in ms. */
export const timeSuggestion = async (origin: string, draft: { readonly title: string; readonly content: string }) => {
  const started = performance.now()
  const res = await fetch(`${origin}/api/widget/v1/suggestions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ organizationId, boardId, title: draft.title, content: draft.content })
  })
  await res.arrayBuffer()
  if (res.status !== 200) throw new Error(`POST /suggestions answered ${res.status}`)
  return performance.now() - started
}
