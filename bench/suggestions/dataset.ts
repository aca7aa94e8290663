/** The labelled set (`dataset.json`) that `npm run quality`, the speed bench and the tests read. */
import { readFileSync } from "node:fs"
import { join } from "node:path"

export interface Draft {
  readonly id: string
  readonly boardId: string
  /** paraphrase, typo, abbreviation, …, negative */
  readonly kind: string
  readonly title: string
  readonly content: string
  /** The post ids a good answer has in its top 5; `[]` when the draft has no duplicate. */
  readonly expected: ReadonlyArray<string>
}

export interface Dataset {
  readonly boards: ReadonlyArray<{ readonly id: string; readonly name: string }>
  readonly posts: ReadonlyArray<{
    readonly id: string
    readonly boardId: string
    readonly title: string
    readonly content: string
    readonly createdAt: string
  }>
  readonly drafts: ReadonlyArray<Draft>
}

export const loadDataset = (path = join(import.meta.dirname, "dataset.json")): Dataset => JSON.parse(readFileSync(path, "utf8"))

/** The organization that holds the set when it is imported. */
export const qualityOrganizationId = "org_quality"

/** The set as one organization of the fixture format (CONTRACT §3): its boards public, its posts as written. */
export const datasetOrganization = (dataset: Dataset) => ({
  id: qualityOrganizationId,
  name: "Quality",
  statuses: [{ id: "st_quality", name: "Open" }],
  boards: dataset.boards.map((b, i) => ({ id: b.id, name: b.name, slug: `board-${i}`, visibility: "public" as const })),
  posts: dataset.posts
})
