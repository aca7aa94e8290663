import { Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { promisify } from "node:util"
import { brotliCompress, constants, gzip } from "node:zlib"

/**
 * A large page served as it is (`/docs`, the widget): its bytes and their
 * gzip and brotli encodings, made once (at start-up, or by `npm run build`
 * for the `/docs` page) and shared by every answer.
 *
 * Why not a body per request (decision 0016): Node buffers a pending answer
 * until the client reads, so each one that holds its own string or its own
 * compressed copy costs the page's size, and pipelined clients that never
 * read grew the heap past its limit. An answer made of these Buffers is a
 * reference, however many are waiting.
 */
export interface StaticAsset {
  readonly identity: Buffer
  /** Absent where compressing does not make the body smaller. */
  readonly gzip: Buffer | undefined
  readonly br: Buffer | undefined
  readonly headers: Readonly<Record<string, string>>
}

const gzipAsync = promisify(gzip)
const brotliAsync = promisify(brotliCompress)

/**
 * On the 3.2 MB docs page: quality 6 gives 787 KB in 0.36 s, 9 gives 771 KB in
 * 1.9 s and 11 gives 698 KB in 37 s, at every build. A 1 MB window (lgwin 20)
 * instead of 4 MB gives the same size and leaves the server's RSS about 13 MB
 * lower (decision 0016).
 */
const brotliParams = {
  [constants.BROTLI_PARAM_QUALITY]: 6,
  [constants.BROTLI_PARAM_LGWIN]: 20,
  [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT
}

const smaller = (encoded: Buffer, identity: Buffer) => encoded.length < identity.length ? encoded : undefined

const headersOf = (contentType: string, headers: Readonly<Record<string, string>> = {}) => ({
  ...headers,
  "content-type": contentType,
  vary: "accept-encoding"
})

/** A file's bytes, or undefined when it cannot be read (not built). */
export const readOptional = (path: string): Buffer | undefined => {
  try {
    return readFileSync(path)
  } catch {
    return undefined
  }
}

/** Encodes `body` once, off the event loop (zlib's thread pool). */
export const make = Effect.fn("StaticAsset.make")(function*(
  body: Uint8Array,
  contentType: string,
  headers: Readonly<Record<string, string>> = {}
) {
  const identity = Buffer.from(body.buffer, body.byteOffset, body.byteLength)
  const [gzipped, brotli] = yield* Effect.promise(() =>
    Promise.all([
      gzipAsync(identity, { level: 9 }),
      brotliAsync(identity, { params: { ...brotliParams, [constants.BROTLI_PARAM_SIZE_HINT]: identity.length } })
    ])
  )
  return {
    identity,
    gzip: smaller(gzipped, identity),
    br: smaller(brotli, identity),
    headers: headersOf(contentType, headers)
  } satisfies StaticAsset
})

/**
 * Stores an asset made at build time as files: `path`, `path.gz` and
 * `path.br` where they are smaller, and `path.sha256`, the fingerprint of
 * what it was made from, written last so that an interrupted build reads as none.
 */
export const write = (asset: StaticAsset, path: string, fingerprint: string) => {
  const same = (file: string, bytes: Buffer | undefined) => {
    const stored = readOptional(file)
    return bytes === undefined ? stored === undefined : stored !== undefined && stored.equals(bytes)
  }
  // A build that changes nothing touches nothing: servers reading `dist/static` meanwhile (tests build while
  // other tests serve) never see the fingerprint missing.
  if (
    same(path, asset.identity) && same(`${path}.gz`, asset.gzip) && same(`${path}.br`, asset.br) &&
    readOptional(`${path}.sha256`)?.toString("utf8") === fingerprint
  ) return
  rmSync(`${path}.sha256`, { force: true })
  writeWhole(path, asset.identity)
  for (const [coding, bytes] of [["gz", asset.gzip], ["br", asset.br]] as const) {
    if (bytes === undefined) rmSync(`${path}.${coding}`, { force: true })
    else writeWhole(`${path}.${coding}`, bytes)
  }
  writeWhole(`${path}.sha256`, fingerprint)
}

/** Through a temporary file and a rename: a reader finds the old bytes or the new ones, never half of them. */
const writeWhole = (path: string, bytes: Buffer | string) => {
  const temporary = `${path}.${process.pid}.tmp`
  writeFileSync(temporary, bytes)
  renameSync(temporary, path)
}

/**
 * The asset `write` stored at `path`, if it is there and was made from what
 * `fingerprint` names; otherwise undefined (not built, or built from another
 * version of its source).
 */
export const read = (path: string, fingerprint: string, contentType: string): StaticAsset | undefined => {
  const identity = readOptional(path)
  if (identity === undefined || readOptional(`${path}.sha256`)?.toString("utf8") !== fingerprint) return undefined
  return {
    identity,
    gzip: readOptional(`${path}.gz`),
    br: readOptional(`${path}.br`),
    headers: headersOf(contentType)
  }
}

/** A coding's weight in `Accept-Encoding` (RFC 9110 §12.5.3): its own, else `*`'s, else 0. */
const weights = (header: string) => {
  const weight = new Map<string, number>()
  for (const member of header.split(",")) {
    const [name = "", ...params] = member.split(";").map((part) => part.trim().toLowerCase())
    if (name === "") continue
    const q = params.find((p) => p.startsWith("q="))
    const value = q === undefined ? 1 : Number(q.slice(2))
    weight.set(name, Number.isFinite(value) ? value : 0)
  }
  return (coding: string) => weight.get(coding) ?? weight.get("*") ?? 0
}

/** brotli, else gzip, else the bytes as they are (identity is always acceptable here: a 406 helps no one). */
export const choose = (asset: StaticAsset, acceptEncoding: string | undefined): { readonly body: Buffer; readonly encoding?: "br" | "gzip" } => {
  if (acceptEncoding === undefined || acceptEncoding === "") return { body: asset.identity }
  const weight = weights(acceptEncoding)
  if (asset.br !== undefined && weight("br") > 0) return { body: asset.br, encoding: "br" }
  if (asset.gzip !== undefined && weight("gzip") > 0) return { body: asset.gzip, encoding: "gzip" }
  return { body: asset.identity }
}

/** The answer in the encoding the client accepts; its body is the shared Buffer, never a copy. */
export const respond = (asset: StaticAsset) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const { body, encoding } = choose(asset, request.headers["accept-encoding"])
    return HttpServerResponse.uint8Array(body, {
      headers: encoding === undefined ? asset.headers : { ...asset.headers, "content-encoding": encoding }
    })
  })
