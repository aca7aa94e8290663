import { Board, publicMaxAgeSeconds, type Update } from "@hearken/api/effect"
import { Clock, Context, Effect, Exit, Layer, Option, Schema, Stream } from "effect"
import { HttpServerResponse } from "effect/http"
import { createHash } from "node:crypto"
import { Boards } from "../boards/Boards.js"
import { ReadSql } from "../sql/ReadReplica.js"
import { type Cursor, Updates } from "../updates/Updates.js"
import { type BoundedCacheOptions, make as makeBoundedCache, stringBytes } from "./BoundedCache.js"
import { type Version, Versions } from "./Versions.js"

/** Serialized answers kept, in bytes: UTF-8 bodies, their tags and keys (decision 0025). */
export const cacheBytes = 16 * 1024 * 1024
/** Answers kept, two per organization at most: far more organizations than one process serves at a time. */
export const cacheEntries = 10_000
/** An answer not written again for this long goes, read or not: a tag check finds the stale ones, time frees their memory. */
export const answerTtl = "5 minutes"

type Kind = "boards" | "updates"

/**
 * The tag of an organization's answer: its kind, organization and version,
 * and for the changelog how many scheduled entries are due. Strong: the same
 * tag is always the same bytes.
 */
export const etagOf = (kind: Kind, organizationId: string, version: Version) => {
  const parts = kind === "boards"
    ? [kind, organizationId, version.epoch, version.boards]
    : [kind, organizationId, version.epoch, version.updates, version.due]
  return `"${createHash("sha256").update(parts.join("\u0000")).digest("base64url").slice(0, 27)}"`
}

/**
 * Whether `If-None-Match` (one tag, a list, or `*`) names `tag`. The
 * comparison is weak (RFC 9110 §13.1.2): `W/"x"` matches `"x"`.
 */
export const matches = (ifNoneMatch: string, tag: string) =>
  ifNoneMatch.split(",").some((candidate) => {
    const t = candidate.trim()
    return t === "*" || t.replace(/^W\//, "") === tag
  })

const encodeBoards = Schema.encodeSync(Schema.Array(Board))
const encoder = new TextEncoder()
const comma = encoder.encode(",")

/** The largest answer kept: a quarter of the cache. */
export const largestAnswer = cacheBytes / 4

export interface KeptAnswer {
  readonly tag: string
  readonly body: Uint8Array
}

/**
 * Serialized answers by key (kind and organization) with the tag they were
 * made for: at most `cacheEntries` and `cacheBytes` in all, least recently
 * used out first; none over `largestAnswer`; each gone `answerTtl` after it
 * was kept (`BoundedCache.ts`).
 */
export const answerCacheOptions: BoundedCacheOptions<KeptAnswer> = {
  maxEntries: cacheEntries,
  maxBytes: cacheBytes,
  maxEntryBytes: largestAnswer,
  timeToLive: answerTtl,
  sizeOf: (answer) => answer.body.byteLength + stringBytes(answer.tag)
}

/**
 * An empty list is never kept: reading it again finds nothing, cheaply, and
 * it is the answer of every organization that does not exist, which a
 * visitor can name by the million (decision 0025).
 */
export const worthKeeping = (body: Uint8Array) => body.byteLength > 2

/**
 * `GET /boards` and `GET /updates` with conditional requests (decision 0010):
 * one read of the organization's version row gives the tag; a matching
 * `If-None-Match` answers 304 without touching the boards or updates, and an
 * answer already serialized for that tag is sent as it is (UTF-8 bytes, kept
 * as `answerCacheOptions` bounds them).
 *
 * The changelog is read a page at a time: an answer that fits in one page is
 * sent whole; a longer one is streamed page by page, so that memory does not
 * grow with the changelog (decision 0011), and kept only if it is small
 * enough to cache.
 *
 * With a read replica (`ReadSql`), the version and the body of one answer are
 * read on one server (`ReadSql.oneServer`): a version from the primary with a
 * body from a lagging replica would keep a stale body under a new tag.
 */
export class PublicAnswers extends Context.Service<PublicAnswers, {
  readonly boards: (organizationId: string, ifNoneMatch: string | undefined) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  readonly updates: (organizationId: string, ifNoneMatch: string | undefined) => Effect.Effect<HttpServerResponse.HttpServerResponse>
}>()("hearken/PublicAnswers") {
  /** Needs `Versions`, `Boards`, `Updates` and `ReadSql`. */
  static readonly layerNoDeps = Layer.effect(
    PublicAnswers,
    Effect.gen(function*() {
      const versions = yield* Versions
      const boards = yield* Boards
      const updates = yield* Updates
      const reads = yield* ReadSql
      const cache = yield* makeBoundedCache(answerCacheOptions)

      type Answer = Uint8Array | Stream.Stream<Uint8Array>

      type OneServer = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
      type Load = (organizationId: string, nowMs: number, keep: (body: Uint8Array) => Effect.Effect<void>, oneServer: OneServer) => Effect.Effect<Answer>

      /**
       * `load` gives a whole answer, which is kept, or a stream, which calls `keep` itself once complete;
       * it reads through `oneServer`, as the version was read.
       */
      const respond = (kind: Kind, load: Load) =>
        Effect.fnUntraced(function*(organizationId: string, ifNoneMatch: string | undefined) {
          const nowMs = yield* Clock.currentTimeMillis
          const oneServer = yield* reads.oneServer
          const tag = etagOf(kind, organizationId, yield* oneServer(versions.read(organizationId, nowMs)))
          const headers = { etag: tag, "cache-control": `public, max-age=${publicMaxAgeSeconds}` }
          if (ifNoneMatch !== undefined && matches(ifNoneMatch, tag)) return HttpServerResponse.empty({ status: 304, headers })
          const key = `${kind}\u0000${organizationId}`
          const cached = yield* cache.get(key)
          if (Option.isSome(cached) && cached.value.tag === tag) {
            return HttpServerResponse.uint8Array(cached.value.body, { contentType: "application/json", headers })
          }
          // Read after the version: the body is at least as new as its tag, so a stale body is never cached under a newer tag.
          const keep = (body: Uint8Array) => worthKeeping(body) ? cache.set(key, { tag, body }) : Effect.void
          const answer = yield* load(organizationId, nowMs, keep, oneServer)
          if (!(answer instanceof Uint8Array)) return HttpServerResponse.stream(answer, { contentType: "application/json", headers })
          yield* keep(answer)
          return HttpServerResponse.uint8Array(answer, { contentType: "application/json", headers })
        })

      const loadUpdates = Effect.fnUntraced(function*(
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

      return PublicAnswers.of({
        boards: Effect.fn("PublicAnswers.boards")(
          respond("boards", (organizationId, _nowMs, _keep, oneServer) =>
            Effect.map(oneServer(boards.listPublic(organizationId)), (list) => encoder.encode(JSON.stringify(encodeBoards(list)))))
        ),
        updates: Effect.fn("PublicAnswers.updates")(respond("updates", loadUpdates))
      })
    })
  )

  static readonly layer = this.layerNoDeps.pipe(Layer.provide([Versions.layer, Boards.layer, Updates.layer]))
}
