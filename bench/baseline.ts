/**
 * The raw baseline of `npm run bench` (`load/main.ts`): the "physical limit" that
 * Hearken is compared with. `node bench/baseline.ts` with PORT, HOST,
 * DATABASE_URL, REDIS_URL and RATE_LIMIT_MULTIPLIER (as the server reads them).
 *
 * It does the same work as the server for the three loaded endpoints, with as
 * little in between as Node allows: plain `node:http`, plain `pg` (a pool of
 * 10, as the server's, with named statements, as the server's client prepares
 * its statements), one `ioredis` client.
 * - Every request first spends one request of its bucket: the same GCRA Lua
 *   script (`gcra.ts`), the same key (`hearken:rl:` + endpoint + the client
 *   address's bucket, `ClientIp.ts`), the same per-endpoint limits times
 *   RATE_LIMIT_MULTIPLIER (`RateLimits`), the same `RateLimit-*` headers;
 *   429 when refused, 503 when Redis does not answer.
 * - GET /boards and GET /updates, as `caching/ConditionalAnswers.ts` does (decision
 *   0010): the organization's version row (the server's query) gives the
 *   ETag (`etagOf`); a matching If-None-Match gets 304; else the answer
 *   serialized for that tag is sent from a cache bounded as the server's
 *   (`answerCacheOptions`), and on a miss
 *   the list is read with the server's query. Changelog entries are read a page
 *   (`pageSize`) at a time, streamed when longer than a page, with the content
 *   kept as served (`update_html`) or else through the server's sanitizer
 *   (`Sanitizer.make`) and kept, as `Updates.ts` does.
 * - POST /feedback: a minimal check of the body (the API's field limits; no
 *   identity token), then as `Feedback.ts` and `Posts.ts` do: the board, the
 *   default status, the sanitized content and its text, then in one
 *   transaction the slug (the server's counter statement, `numberedSlug`, its
 *   insert with ON CONFLICT, retried), the post with the same columns
 *   (lexicon columns from the server's `lexiconOf`) and the webhook outbox
 *   statement, imported from the server (`OutboxRepo.enqueueStatement`).
 * Answers have the spec's JSON shapes; `load/load.ts` checks that both servers
 * answer the same before it loads them.
 */
import { Limits, postCreatedEventType, publicMaxAgeSeconds, RateLimits } from "@hearken/api/effect"
import { PgClient } from "@effect/sql-pg"
import { Effect, Option } from "effect"
import { Statement } from "effect/sql"
import { Redis } from "ioredis"
import { randomUUID } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import pg from "pg"
import { makeStore } from "../packages/server/dist/caching/BoundedCache.js"
import { answerCacheOptions, etagOf, largestAnswer, matches, worthKeeping } from "../packages/server/dist/caching/ConditionalAnswers.js"
import { pageSize } from "../packages/server/dist/updates/Updates.js"
import { make as makeSanitizer, sanitizerVersion, truncate } from "../packages/server/dist/content/Sanitizer.js"
import { numberedSlug, slugify } from "../packages/server/dist/content/slug.js"
import { maxBodyBytes } from "../packages/server/dist/http/BodyLimits.js"
import { excerptLength } from "../packages/server/dist/feedback/Feedback.js"
import { lexiconOf } from "../packages/server/dist/lexicon/lexicon.js"
import { bucketOf, clientAddress } from "../packages/server/dist/rate-limit/ClientIp.js"
import { redisScript } from "../packages/server/dist/rate-limit/gcra.js"
import { periodMs, redisOptions } from "../packages/server/dist/rate-limit/RateLimiter.js"
import { enqueueStatement, type OutboxEvent } from "../packages/server/dist/webhooks/OutboxRepo.js"

const env = (name: string) => {
  const value = process.env[name]
  if (value === undefined || value === "") throw new Error(`${name} is required`)
  return value
}

const multiplier = Number(process.env["RATE_LIMIT_MULTIPLIER"] ?? 1)
const limits = {
  boards: Math.round(RateLimits.boards * multiplier),
  updates: Math.round(RateLimits.updates * multiplier),
  feedback: Math.round(RateLimits.feedback * multiplier)
}
type Endpoint = keyof typeof limits
/** `RateLimiter.ts`'s key prefix (not exported there). */
const keyPrefix = "hearken:rl:"
const prefix = "/api/widget/v1/"
const slugAttempts = 20
/** `Posts.ts`'s `LIKE` pattern of `base-` followed by anything. */
const likePrefix = (base: string) => `${base.replace(/[\\%_]/g, "\\$&")}-%`

const pool = new pg.Pool({ connectionString: env("DATABASE_URL"), max: 10 })
const redis = new Redis(env("REDIS_URL"), redisOptions)
redis.defineCommand("hearkenGcra", { numberOfKeys: 1, lua: redisScript })
redis.on("error", () => {})
const gcra = (redis as unknown as {
  hearkenGcra: (key: string, limit: number, period: number) => Promise<[number, number, number, number]>
}).hearkenGcra.bind(redis)
const sanitizer = makeSanitizer()

const statements = {
  boards: `SELECT id, name, slug, organization_id AS "organizationId",
                  iso_ms(created_at) AS "createdAt", iso_ms(updated_at) AS "updatedAt"
           FROM boards
           WHERE organization_id = $1 AND visibility = 'public'
           ORDER BY created_at, id`,
  updates: `SELECT u.id, u.title, u.slug, u.excerpt, u.image_url AS "imageUrl", iso_ms(u.published_at) AS "publishedAt",
                   u.published_at::text AS cursor, h.html AS served, md5(u.content) AS "sourceHash",
                   CASE WHEN h.html IS NULL THEN u.content ELSE '' END AS content
            FROM updates u
            LEFT JOIN update_html h ON h.update_id = u.id AND h.source_hash = md5(u.content) AND h.sanitizer = $5
            WHERE u.organization_id = $1 AND u.published_at IS NOT NULL AND u.published_at <= $2::timestamptz
              AND ($3::timestamptz IS NULL OR u.published_at < $3::timestamptz OR (u.published_at = $3::timestamptz AND u.id > $4))
            ORDER BY u.published_at DESC, u.id ASC
            LIMIT ${pageSize}`,
  keepHtml: `INSERT INTO update_html (update_id, source_hash, sanitizer, html)
             SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::text[])
             ON CONFLICT (update_id) DO UPDATE
             SET source_hash = EXCLUDED.source_hash, sanitizer = EXCLUDED.sanitizer, html = EXCLUDED.html`,
  version: `SELECT epoch, boards::text AS boards, updates::text AS updates,
              (SELECT count(*) FROM unnest(scheduled) AS s WHERE s <= $2::timestamptz)::int AS due
            FROM organization_versions WHERE organization_id = $1`,
  board: `SELECT id, visibility FROM boards WHERE id = $1 AND organization_id = $2`,
  defaultStatus: `SELECT id FROM statuses WHERE organization_id = $1 ORDER BY is_default DESC, position, id LIMIT 1`,
  nextSlugNumber: `WITH bumped AS (
                    UPDATE slug_counters SET last = last + 1
                    WHERE organization_id = $1 AND base = $2
                    RETURNING last
                  ), created AS (
                    INSERT INTO slug_counters AS c (organization_id, base, last)
                    SELECT $1, $2, COALESCE((
                      SELECT max(CASE WHEN slug = $2 THEN 1 ELSE substr(slug, $4)::int END) FROM posts
                      WHERE organization_id = $1
                        AND (slug = $2 OR (slug LIKE $3 AND substr(slug, $4) ~ '^[0-9]{1,9}$'))
                    ), 0) + 1
                    WHERE NOT EXISTS (SELECT 1 FROM bumped)
                    ON CONFLICT (organization_id, base) DO UPDATE SET last = c.last + 1
                    RETURNING last
                  )
                  SELECT last FROM bumped UNION ALL SELECT last FROM created`,
  insertPost: `INSERT INTO posts
                 (id, organization_id, board_id, title, slug, content, excerpt, visibility, status_id, metadata, source,
                  contact_id, lexicon, title_lexicon, created_at, updated_at)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11, $12, $13::tsvector, $14::tsvector,
                 COALESCE($15::timestamptz, now()), COALESCE($15::timestamptz, now()))
               ON CONFLICT (organization_id, slug) DO NOTHING
               RETURNING slug, iso_ms(created_at) AS "createdAt"`
}
type StatementName = keyof typeof statements

const query = <Row>(db: pg.Pool | pg.PoolClient, name: StatementName, values: Array<unknown>) =>
  db.query<Row & pg.QueryResultRow>({ name, text: statements[name], values }).then((result) => result.rows)

/**
 * The server's statements built by its own modules, compiled for `pg` as the server's client
 * compiles them; they are never run through this constructor (it has no connection).
 */
const compiled = Statement.make(
  Effect.die(new Error("the baseline runs its statements with pg")),
  PgClient.makeCompiler(),
  [],
  undefined
)

/** The server's outbox statement (`OutboxRepo.enqueueStatement`), as a named statement. */
const enqueue = (db: pg.PoolClient, event: OutboxEvent) => {
  const [text, values] = enqueueStatement(compiled, event).compile()
  return db.query({ name: "enqueue", text, values: [...values] })
}

const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  const json = JSON.stringify(body)
  res.writeHead(status, { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(json) })
  res.end(json)
}

const fail = (res: ServerResponse, status: number, tag: string, message: string, headers: Record<string, string> = {}) =>
  send(res, status, { _tag: tag, message }, headers)

const seconds = (ms: number) => Math.max(0, Math.ceil(ms / 1000))

/** Spends one request of the caller's bucket; the `RateLimit-*` headers, or undefined once it has answered 429/503. */
const limit = async (endpoint: Endpoint, req: IncomingMessage, res: ServerResponse) => {
  const address = clientAddress(req.socket.remoteAddress, undefined, 0)
  const bucket = `${endpoint}:${address === undefined ? "unknown" : bucketOf(address)}`
  const perMinute = limits[endpoint]
  let decision: [number, number, number, number]
  try {
    decision = await gcra(keyPrefix + bucket, perMinute, periodMs)
  } catch {
    fail(res, 503, "RateLimitUnavailableError", "Rate limiting is temporarily unavailable; retry shortly", { "retry-after": "1" })
    return undefined
  }
  const [allowed, remaining, resetMs, retryAfterMs] = decision
  const headers: Record<string, string> = {
    "ratelimit-limit": String(perMinute),
    "ratelimit-remaining": String(remaining),
    "ratelimit-reset": String(seconds(resetMs))
  }
  if (allowed !== 1) {
    const retry = Math.max(1, seconds(retryAfterMs))
    fail(res, 429, "RateLimitExceededError", `At most ${perMinute} requests per minute; retry in ${retry} s`, {
      ...headers,
      "retry-after": String(retry)
    })
    return undefined
  }
  return headers
}

/** Serialized answers by kind and organization, bounded as `ConditionalAnswers.ts` bounds them. */
const store = makeStore(answerCacheOptions)
const answers = {
  get: (key: string) => Option.getOrUndefined(store.get(key, Date.now())),
  remember: (key: string, answer: { readonly tag: string; readonly body: Uint8Array }) => {
    if (worthKeeping(answer.body)) store.set(key, answer, Date.now())
  }
}

const readBody = (req: IncomingMessage) =>
  new Promise<string | undefined>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let size = 0
    req.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size <= maxBodyBytes) chunks.push(chunk)
    })
    req.on("end", () => resolve(size > maxBodyBytes ? undefined : Buffer.concat(chunks).toString("utf8")))
    req.on("error", reject)
  })

const codePoints = (s: string) => {
  let n = 0
  for (const _ of s) n++
  return n
}
const isText = (v: unknown, max = Infinity): v is string => typeof v === "string" && !v.includes("\u0000") && codePoints(v) <= max
const isId = (v: unknown): v is string => isText(v, Limits.id) && v !== ""

/** The API's field limits (docs/api.md: "Limits"), nothing more; undefined when the body is acceptable. */
const invalid = (body: Record<string, unknown>) => {
  if (!isId(body["organizationId"])) return "organizationId"
  if (!isId(body["boardId"])) return "boardId"
  if (!isText(body["title"], 200) || !/\S/u.test(body["title"])) return "title"
  if (!isText(body["content"], 20_000)) return "content"
  const metadata = body["metadata"]
  if (metadata !== undefined) {
    if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata)) return "metadata"
    const entries = Object.entries(metadata)
    if (entries.length > 20 || entries.some(([k, v]) => !isText(k, 64) || !isText(v, 500))) return "metadata"
  }
  if (body["token"] !== undefined) return "token (identity tokens are not part of the baseline)"
  return undefined
}

const lists = {
  boards: (organizationId: string) => query(pool, "boards", [organizationId]),
  /** One page of the changelog, sanitized, as JSON elements; the next page's cursor when this one is full. */
  updatesPage: async (organizationId: string, now: string, cursor: readonly [string, string] | undefined) => {
    type Row = { id: string; content: string; cursor?: string; served?: string | null; sourceHash?: string }
    const rows = await query<Row>(pool, "updates", [organizationId, now, cursor?.[0] ?? null, cursor?.[1] ?? null, sanitizerVersion])
    const last = rows.at(-1)
    const next = rows.length === pageSize && last !== undefined ? [last.cursor!, last.id] as const : undefined
    const fresh: Array<Row> = []
    const json = rows.map(({ content, cursor: _, served, sourceHash, ...row }) => {
      if (served !== null && served !== undefined) return JSON.stringify({ ...row, content: served })
      const html = sanitizer.update(content)
      fresh.push({ id: row.id, content: html, sourceHash: sourceHash! })
      return JSON.stringify({ ...row, content: html })
    })
    if (fresh.length > 0) {
      await query(pool, "keepHtml", [fresh.map((r) => r.id), fresh.map((r) => r.sourceHash), fresh.map(() => sanitizerVersion), fresh.map((r) => r.content)])
        .catch(() => undefined)
    }
    return { json: json.join(","), next }
  }
}

/** GET /boards or /updates: the tag from the version row, 304, the cached answer, or the list read and kept. */
const answer = async (
  kind: "boards" | "updates",
  organizationId: string,
  req: IncomingMessage,
  res: ServerResponse,
  limitHeaders: Record<string, string>
) => {
  const now = new Date().toISOString()
  const [row] = await query<{ epoch: string; boards: string; updates: string; due: number }>(pool, "version", [organizationId, now])
  const version = row === undefined
    ? { epoch: "none", boards: 0, updates: 0, due: 0 }
    : { epoch: row.epoch, boards: Number(row.boards), updates: Number(row.updates), due: row.due }
  const tag = etagOf(kind, organizationId, version)
  const headers = { ...limitHeaders, etag: tag, "cache-control": `public, max-age=${publicMaxAgeSeconds}` }
  const ifNoneMatch = req.headers["if-none-match"]
  if (ifNoneMatch !== undefined && matches(ifNoneMatch, tag)) return res.writeHead(304, headers).end()
  const key = `${kind}\u0000${organizationId}`
  const cached = answers.get(key)
  let body = cached?.tag === tag ? cached.body : undefined
  if (body === undefined && kind === "boards") {
    body = Buffer.from(JSON.stringify(await lists.boards(organizationId)))
    answers.remember(key, { tag, body })
  }
  if (body === undefined) {
    // The changelog a page at a time: whole when it fits in one, else streamed and kept only while small enough.
    const first = await lists.updatesPage(organizationId, now, undefined)
    if (first.next === undefined) {
      body = Buffer.from(`[${first.json}]`)
      answers.remember(key, { tag, body })
    } else {
      res.writeHead(200, { ...headers, "content-type": "application/json" })
      let kept: Array<Buffer> | undefined = []
      let keptBytes = 0
      const write = (chunk: Buffer) => {
        if (kept !== undefined) {
          keptBytes += chunk.byteLength
          if (keptBytes > largestAnswer) kept = undefined
          else kept.push(chunk)
        }
        return res.write(chunk)
      }
      write(Buffer.from(`[${first.json}`))
      let cursor: readonly [string, string] | undefined = first.next
      while (cursor !== undefined) {
        const page = await lists.updatesPage(organizationId, now, cursor)
        if (page.json !== "") write(Buffer.from(`,${page.json}`))
        cursor = page.next
      }
      write(Buffer.from("]"))
      if (kept !== undefined) answers.remember(key, { tag, body: Buffer.concat(kept) })
      return res.end()
    }
  }
  res.writeHead(200, { ...headers, "content-type": "application/json", "content-length": body.byteLength })
  res.end(body)
}

const feedback = async (req: IncomingMessage, res: ServerResponse, headers: Record<string, string>) => {
  const raw = await readBody(req)
  let body: unknown
  try {
    body = raw === undefined ? undefined : JSON.parse(raw)
  } catch {
    body = undefined
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return fail(res, 400, "DataValidationError", "the body must be a JSON object", headers)
  }
  const request = body as Record<string, unknown>
  const problem = invalid(request)
  if (problem !== undefined) return fail(res, 400, "DataValidationError", `invalid ${problem}`, headers)
  const organizationId = request["organizationId"] as string
  const boardId = request["boardId"] as string
  const title = request["title"] as string
  const metadata = (request["metadata"] ?? {}) as Record<string, string>

  const [board] = await query<{ visibility: string }>(pool, "board", [boardId, organizationId])
  if (board === undefined) return fail(res, 404, "NotFoundError", "boardId: no such board in this organization", headers)
  if (board.visibility !== "public") {
    return fail(res, 400, "DataValidationError", "boardId: feedback cannot be submitted to a private board", headers)
  }
  const [status] = await query<{ id: string }>(pool, "defaultStatus", [organizationId])
  if (status === undefined) return fail(res, 500, "InternalServerError", "The organization has no post statuses configured", headers)
  const content = sanitizer.post(request["content"] as string)
  const text = sanitizer.text(content)
  const id = randomUUID()
  const lexicons = lexiconOf({ boardId, title, text, visibility: "public" })
  const base = slugify(title)

  const client = await pool.connect()
  let inserted: { slug: string; createdAt: string } | undefined
  try {
    await client.query("BEGIN")
    for (let attempt = 0; attempt < slugAttempts && inserted === undefined; attempt++) {
      const [next] = await query<{ last: number }>(client, "nextSlugNumber", [organizationId, base, likePrefix(base), base.length + 2])
      const slug = numberedSlug(base, next!.last)
      const rows = await query<{ slug: string; createdAt: string }>(client, "insertPost", [
        id, organizationId, boardId, title, slug, content, truncate(text, excerptLength), "public", status.id,
        JSON.stringify(metadata), "widget", null, lexicons.lexicon, lexicons.titleLexicon, null
      ])
      inserted = rows[0]
    }
    if (inserted === undefined) throw new Error(`no free slug for ${base} after ${slugAttempts} attempts`)
    const data = {
      id, slug: inserted.slug, title, boardId, organizationId, createdAt: inserted.createdAt,
      statusId: status.id, contactId: null, metadata
    }
    const event = JSON.stringify({ type: postCreatedEventType, timestamp: inserted.createdAt, data })
    await enqueue(client, {
      id: `msg_${randomUUID().replaceAll("-", "")}`, organizationId, type: postCreatedEventType, body: event, traceparent: null
    })
    await client.query("COMMIT")
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {})
    throw error
  } finally {
    client.release()
  }
  send(res, 200, { id, slug: inserted.slug, title, boardId, organizationId, createdAt: inserted.createdAt }, headers)
}

const route = async (req: IncomingMessage, res: ServerResponse) => {
  const url = req.url ?? "/"
  const q = url.indexOf("?")
  const path = q === -1 ? url : url.slice(0, q)
  if (path === "/health") return send(res, 200, { status: "ok" })
  const endpoint = path.startsWith(prefix) ? path.slice(prefix.length) : ""
  const method = req.method
  if (method === "GET" && (endpoint === "boards" || endpoint === "updates")) {
    const headers = await limit(endpoint, req, res)
    if (headers === undefined) return
    const organizationId = new URLSearchParams(q === -1 ? "" : url.slice(q + 1)).get("organizationId")
    if (!isId(organizationId)) return fail(res, 400, "DataValidationError", "organizationId is required", headers)
    return answer(endpoint, organizationId, req, res, headers)
  }
  if (method === "POST" && endpoint === "feedback") {
    const headers = await limit(endpoint, req, res)
    if (headers === undefined) return
    return feedback(req, res, headers)
  }
  fail(res, 404, "NotFound", "no such route")
}

const server = createServer((req, res) => {
  route(req, res).catch((error: unknown) => {
    console.error(error)
    if (!res.headersSent) fail(res, 500, "InternalServerError", "Internal server error")
    else res.destroy()
  })
})
server.keepAliveTimeout = 65_000

// Requests in flight (a load run just ended) finish before the pool and Redis go.
const stop = () => {
  server.close(() => {
    redis.disconnect()
    void pool.end()
  })
  server.closeIdleConnections()
}
process.once("SIGTERM", stop)
process.once("SIGINT", stop)
// As the server does: give Redis a moment before answering, but never refuse to start without it.
await new Promise<void>((resolve) => {
  if (redis.status === "ready") return resolve()
  redis.once("ready", () => resolve())
  setTimeout(resolve, 3_000).unref()
})
server.listen(Number(process.env["PORT"] ?? 0), process.env["HOST"] ?? "127.0.0.1")
