import { Board, publicMaxAgeSeconds, Update } from "@hearken/api"
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { HttpServerResponse } from "effect/http"
import { createHash } from "node:crypto"
import { Boards } from "../boards/Boards.js"
import { Updates } from "../updates/Updates.js"
import { type Version, Versions } from "./Versions.js"

/** Serialized answers kept per organization, bounded in bytes (strings count two bytes a character). */
export const cacheBytes = 16 * 1024 * 1024

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
const encodeUpdates = Schema.encodeSync(Schema.Array(Update))

/**
 * `GET /boards` and `GET /updates` with conditional requests (decision 0010):
 * one read of the organization's version row gives the tag; a matching
 * `If-None-Match` answers 304 without touching the boards or updates, and an
 * answer already serialized for that tag is sent as it is.
 */
export class PublicAnswers extends Context.Service<PublicAnswers, {
  readonly boards: (organizationId: string, ifNoneMatch: string | undefined) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  readonly updates: (organizationId: string, ifNoneMatch: string | undefined) => Effect.Effect<HttpServerResponse.HttpServerResponse>
}>()("hearken/PublicAnswers") {
  static readonly layer = Layer.effect(
    PublicAnswers,
    Effect.gen(function*() {
      const versions = yield* Versions
      const boards = yield* Boards
      const updates = yield* Updates
      const cache = new Map<string, { readonly tag: string; readonly body: string }>()
      let cachedBytes = 0
      /** A string's size in memory: two bytes a UTF-16 unit. */
      const bytes = (body: string) => body.length * 2

      const remember = (key: string, entry: { readonly tag: string; readonly body: string }) => {
        const old = cache.get(key)
        if (old !== undefined) {
          cache.delete(key)
          cachedBytes -= bytes(old.body)
        }
        if (bytes(entry.body) > cacheBytes / 4) return
        for (const [k, v] of cache) {
          if (cachedBytes + bytes(entry.body) <= cacheBytes) break
          cache.delete(k)
          cachedBytes -= bytes(v.body)
        }
        cache.set(key, entry)
        cachedBytes += bytes(entry.body)
      }

      const respond = (kind: Kind, load: (organizationId: string, nowMs: number) => Effect.Effect<string>) =>
        Effect.fnUntraced(function*(organizationId: string, ifNoneMatch: string | undefined) {
          const nowMs = yield* Clock.currentTimeMillis
          const tag = etagOf(kind, organizationId, yield* versions.read(organizationId, nowMs))
          const headers = { etag: tag, "cache-control": `public, max-age=${publicMaxAgeSeconds}` }
          if (ifNoneMatch !== undefined && matches(ifNoneMatch, tag)) return HttpServerResponse.empty({ status: 304, headers })
          const key = `${kind}\u0000${organizationId}`
          const cached = cache.get(key)
          let body = cached?.tag === tag ? cached.body : undefined
          if (body === undefined) {
            // Read after the version: the body is at least as new as its tag, so a stale body is never cached under a newer tag.
            body = yield* load(organizationId, nowMs)
            remember(key, { tag, body })
          }
          return HttpServerResponse.text(body, { contentType: "application/json", headers })
        })

      return PublicAnswers.of({
        boards: Effect.fn("PublicAnswers.boards")(
          respond("boards", (organizationId) => Effect.map(boards.listPublic(organizationId), (list) => JSON.stringify(encodeBoards(list))))
        ),
        updates: Effect.fn("PublicAnswers.updates")(
          respond("updates", (organizationId, nowMs) =>
            Effect.map(updates.listPublished(organizationId, nowMs), (list) => JSON.stringify(encodeUpdates(list))))
        )
      })
    })
  ).pipe(Layer.provide(Versions.layer))
}
