import { publicMaxAgeSeconds } from "@hearken/api/effect"
import { requestHeaders } from "@hearken/api/thin"
import { Clock, Context, Effect, Layer, Option, type Stream } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { createHash } from "node:crypto"
import { ReadSql } from "../sql/ReadReplica.js"
import { type BoundedCacheOptions, make as makeBoundedCache, stringBytes } from "./BoundedCache.js"
import { type Version, Versions } from "./Versions.js"

/** Serialized answers kept, in bytes: UTF-8 bodies, their tags and keys (decision 0025). */
export const cacheBytes = 16 * 1024 * 1024
/** Answers kept, two per organization at most: far more organizations than one process serves at a time. */
export const cacheEntries = 10_000
/** An answer not written again for this long goes, read or not: a tag check finds the stale ones, time frees their memory. */
export const answerTtl = "5 minutes"

export type Kind = "boards" | "updates"

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

/** The request's `If-None-Match`, as sent. */
export const ifNoneMatch = Effect.map(HttpServerRequest.HttpServerRequest, (request) => request.headers[requestHeaders.ifNoneMatch])

/** Runs a read on the server the answer's version was read on. */
export type OneServer = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

/** An answer's body: whole, and then kept; or a stream, which calls `keep` itself once complete. */
export type Answer = Uint8Array | Stream.Stream<Uint8Array>

/** Reads an answer's body, through `oneServer`, as the version was read. */
export type Load = (
  organizationId: string,
  nowMs: number,
  keep: (body: Uint8Array) => Effect.Effect<void>,
  oneServer: OneServer
) => Effect.Effect<Answer>

/**
 * `GET /boards` and `GET /updates` with conditional requests (decision 0010):
 * one read of the organization's version row gives the tag; a matching
 * `If-None-Match` answers 304 without touching the boards or updates, and an
 * answer already serialized for that tag is sent as it is (UTF-8 bytes, kept
 * as `answerCacheOptions` bounds them, one cache for both kinds). What an
 * answer holds is read by its feature (`boards/PublicBoards.ts`,
 * `updates/PublicUpdates.ts`).
 *
 * With a read replica (`ReadSql`), the version and the body of one answer are
 * read on one server (`ReadSql.oneServer`): a version from the primary with a
 * body from a lagging replica would keep a stale body under a new tag.
 */
export class ConditionalAnswers extends Context.Service<ConditionalAnswers, {
  readonly respond: (
    kind: Kind,
    load: Load
  ) => (organizationId: string, ifNoneMatch: string | undefined) => Effect.Effect<HttpServerResponse.HttpServerResponse>
}>()("hearken/ConditionalAnswers") {
  /** Needs `Versions` and `ReadSql`. */
  static readonly layerNoDeps = Layer.effect(
    ConditionalAnswers,
    Effect.gen(function*() {
      const versions = yield* Versions
      const reads = yield* ReadSql
      const cache = yield* makeBoundedCache(answerCacheOptions)

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

      return ConditionalAnswers.of({ respond })
    })
  )

  static readonly layer = this.layerNoDeps.pipe(Layer.provide(Versions.layer))
}
