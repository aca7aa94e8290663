import { SuggestionMatch, type SuggestionsRequest } from "@hearken/api"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { Sanitizer } from "../content/Sanitizer.js"

export const maxSuggestions = 5
/** Words of the draft that go into the full-text query: the title's first, then the body's. */
const maxQueryWords = 48

/** Letters and digits only, so each word is safe inside a quoted tsquery term. */
const words = (text: string): Array<string> => text.toLowerCase().match(/[\p{L}\p{M}\p{N}]+/gu) ?? []

/** `'dark' | 'mode' | …`: any shared word is a match, more shared words rank higher. */
export const orQuery = (title: string, body: string): string => {
  const unique = [...new Set([...words(title), ...words(body)])].slice(0, maxQueryWords)
  return unique.map((word) => `'${word}'`).join(" | ")
}

const LexicalQuery = Schema.Struct({
  organizationId: Schema.String,
  boardId: Schema.String,
  title: Schema.String,
  tsquery: Schema.String
})

export class Suggestions extends Context.Service<Suggestions, {
  readonly suggest: (request: SuggestionsRequest) => Effect.Effect<ReadonlyArray<SuggestionMatch>>
}>()("hearken/Suggestions") {
  static readonly layer = Layer.effect(
    Suggestions,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const sanitizer = yield* Sanitizer

      // Full-text search with the language-neutral `simple` configuration, plus
      // trigram similarity of titles, which also catches typos and inflections.
      const lexical = SqlSchema.findAll({
        Request: LexicalQuery,
        Result: SuggestionMatch,
        execute: ({ boardId, organizationId, title, tsquery }) =>
          sql`WITH q AS (SELECT CASE WHEN ${tsquery} = '' THEN NULL ELSE to_tsquery('simple', ${tsquery}) END AS tsq)
              SELECT p.id, p.title, p.excerpt, p.slug
              FROM posts p
              JOIN boards b ON b.id = p.board_id AND b.organization_id = ${organizationId} AND b.visibility = 'public'
              CROSS JOIN q
              WHERE p.board_id = ${boardId} AND p.organization_id = ${organizationId} AND p.visibility = 'public'
                AND ((q.tsq IS NOT NULL AND p.search @@ q.tsq) OR (${title} <> '' AND p.title % ${title}))
              ORDER BY COALESCE(ts_rank_cd(p.search, q.tsq, 1), 0) + 2 * similarity(p.title, ${title}) DESC,
                       p.created_at DESC, p.id
              LIMIT ${maxSuggestions}`
      })

      return Suggestions.of({
        suggest: Effect.fn("Suggestions.suggest")(function*(request: SuggestionsRequest) {
          const title = request.title.trim()
          const tsquery = orQuery(title, sanitizer.text(request.content))
          if (tsquery === "") return []
          return yield* lexical({ organizationId: request.organizationId, boardId: request.boardId, title, tsquery }).pipe(
            Effect.orDie
          )
        })
      })
    })
  )
}
