/**
 * The labelled sets that `npm run quality`, the speed benches and the tests
 * read: `dataset.json` (the project's own, written for it) and every
 * `sets/*.json` (real duplicates from public issue trackers, rewritten, each
 * item with its source).
 */
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"

/** The labelled data stays with the benches that made it: `bench/suggestions/dataset.json` and `sets/`. */
const benchSuggestions = join(import.meta.dirname, "..", "..", "bench", "suggestions")

export interface Draft {
  readonly id: string
  readonly boardId: string
  /** paraphrase, typo, abbreviation, …, duplicate (a real one), negative */
  readonly kind: string
  readonly title: string
  readonly content: string
  /** The post ids a good answer has in its top 5; `[]` when the draft has no duplicate. */
  readonly expected: ReadonlyArray<string>
  /** Where a real draft comes from (the issue closed as a duplicate). */
  readonly source?: string
}

export interface Dataset {
  readonly boards: ReadonlyArray<{ readonly id: string; readonly name: string }>
  readonly posts: ReadonlyArray<{
    readonly id: string
    readonly boardId: string
    readonly title: string
    readonly content: string
    readonly createdAt: string
    readonly source?: string
  }>
  readonly drafts: ReadonlyArray<Draft>
}

/** A set, named, with the organization it is imported into. */
export interface LabelledSet extends Dataset {
  readonly name: string
  readonly language: string
  readonly organizationId: string
}

export const loadDataset = (path = join(benchSuggestions, "dataset.json")): Dataset => JSON.parse(readFileSync(path, "utf8"))

/** The organization that holds the project's own set when it is imported. */
export const qualityOrganizationId = "org_quality"

/** The project's own set ("hearken", six languages), then the real ones in name order. */
export const loadSets = (): ReadonlyArray<LabelledSet> => {
  const dir = join(benchSuggestions, "sets")
  const real = readdirSync(dir).filter((f) => f.endsWith(".json")).sort().map((file) => {
    const set = JSON.parse(readFileSync(join(dir, file), "utf8")) as Dataset & { readonly name: string; readonly language: string }
    return { ...set, organizationId: `org_q_${set.name}` }
  })
  return [{ ...loadDataset(), name: "hearken", language: "6 languages", organizationId: qualityOrganizationId }, ...real]
}

/** The set as one organization of the fixture format (docs/operations.md: "Fixtures and re-seeding"): its boards public, its posts as written. */
export const datasetOrganization = (dataset: Dataset, organizationId = qualityOrganizationId) => ({
  id: organizationId,
  name: organizationId,
  statuses: [{ id: `st_${organizationId}`, name: "Open" }],
  boards: dataset.boards.map((b, i) => ({ id: b.id, name: b.name, slug: `board-${i}`, visibility: "public" as const })),
  posts: dataset.posts.map(({ boardId, content, createdAt, id, title }) => ({ id, boardId, title, content, createdAt }))
})

/** FNV-1a, 32 bits: a stable order of ids that owes nothing to their meaning. */
export const hash = (text: string) => {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0
  return h
}

export type Half = "fit" | "held-out"

/**
 * Which half of its set a draft is in: the drafts with a duplicate and those
 * without are each ordered by a hash of their id and dealt alternately, so
 * each half holds half of both, in every set. Thresholds and weights are
 * fitted on "fit" and reported on "held-out".
 */
export const halves = (set: Dataset): ReadonlyMap<string, Half> => {
  const out = new Map<string, Half>()
  for (const negative of [false, true]) {
    set.drafts.filter((d) => (d.expected.length === 0) === negative).sort((a, b) => hash(a.id) - hash(b.id) || (a.id < b.id ? -1 : 1))
      .forEach((d, i) => out.set(d.id, i % 2 === 0 ? "fit" : "held-out"))
  }
  return out
}
