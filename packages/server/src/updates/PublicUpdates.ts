import type { Update } from "@hearken/api/effect"
import { Context, Effect, Exit, Layer, Option, Stream } from "effect"
import type { HttpServerResponse } from "effect/http"
import { ConditionalAnswers, largestAnswer, type OneServer } from "../caching/ConditionalAnswers.js"
import { type Cursor, Updates } from "./Updates.js"

const encoder = new TextEncoder()
const comma = encoder.encode(",")

/**
 * `GET /updates`: an organization's published changelog, tagged and kept by
 * `ConditionalAnswers` (decision 0010). It is read a page at a time: an
 * answer that fits in one page is sent whole; a longer one is streamed page
 * by page, so that memory does not grow with the changelog (decision 0011),
 * and kept only if it is small enough to cache.
 */
export class PublicUpdates extends Context.Service<PublicUpdates, {
  readonly answer: (organizationId: string, ifNoneMatch: string | undefined) => Effect.Effect<HttpServerResponse.HttpServerResponse>
}>()("hearken/PublicUpdates") {
  /** Needs `ConditionalAnswers` and `Updates`. */
  static readonly layerNoDeps = Layer.effect(
    PublicUpdates,
    Effect.gen(function*() {
      const answers = yield* ConditionalAnswers
      const updates = yield* Updates

      const load = Effect.fnUntraced(function*(
        organizationId: string,
        nowMs: number,
        keep: (body: Uint8Array) => Effect.Effect<void>,
        oneServer: OneServer
      ) {
        const first = yield* oneServer(updates.page(organizationId, nowMs, undefined))
        const json = (entries: ReadonlyArray<Update>) => encoder.encode(updates.toJson(entries).join(","))
        if (Option.isNone(first.next)) return encoder.encode(`[${updates.toJson(first.entries).join(",")}]`)
        // Longer than a page: stream it, keeping the pages only while they fit in the cache.
        let kept: Array<Uint8Array> | undefined = []
        let keptBytes = 0
        const collect = (chunk: Uint8Array) => {
          if (kept === undefined) return
          keptBytes += chunk.byteLength
          if (keptBytes > largestAnswer) kept = undefined
          else kept.push(chunk)
        }
        const pages = Stream.paginate<Option.Option<Cursor>, Uint8Array>(first.next, (cursor) =>
          Option.isNone(cursor)
            ? Effect.succeed([[], Option.none()])
            : Effect.map(oneServer(updates.page(organizationId, nowMs, cursor.value)), (page) =>
              [page.entries.length === 0 ? [] : [comma, json(page.entries)], Option.some(page.next)]))
        return Stream.concat(Stream.fromIterable([encoder.encode("["), json(first.entries)]), pages).pipe(
          Stream.concat(Stream.make(encoder.encode("]"))),
          Stream.tap((chunk) => Effect.sync(() => collect(chunk))),
          Stream.onExit((exit) => Exit.isSuccess(exit) && kept !== undefined ? keep(Buffer.concat(kept)) : Effect.void)
        )
      })

      return PublicUpdates.of({ answer: Effect.fn("PublicUpdates.answer")(answers.respond("updates", load)) })
    })
  )
}
