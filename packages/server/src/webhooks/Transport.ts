import { Context, Effect, Layer } from "effect"
import { lookup as dnsLookup } from "node:dns/promises"
import { type ClientRequest, Agent as HttpAgent, type IncomingMessage, request as httpRequest } from "node:http"
import { Agent as HttpsAgent, request as httpsRequest } from "node:https"
import type { LookupFunction } from "node:net"
import { WebhookConfig } from "../config/webhooks.js"
import { blockedRange, hostOf } from "./AddressGuard.js"
import type { AttemptResult } from "./RetryPolicy.js"
import { maxInFlight } from "./limits.js"

/** At most this much of a receiver's answer is read; the rest is dropped with the connection. */
export const maxResponseBytes = 64 * 1024
/** What is kept of it for the operator, in characters. */
export const answerExcerptLength = 500

interface Target {
  readonly url: URL
  readonly address: string
  readonly family: number
}

/** Hands the connection exactly the address that was checked, whatever DNS says by then. */
const pinnedLookup = (address: string, family: number): LookupFunction => (_hostname, options, callback) => {
  if (options.all === true) (callback as (e: null, addresses: Array<{ address: string; family: number }>) => void)(null, [{ address, family }])
  else callback(null, address, family)
}

const errorMessage = (error: unknown) => {
  const e = error as NodeJS.ErrnoException
  return e.code !== undefined ? `${e.code}${e.message.includes(e.code) ? "" : ` (${e.message})`}`.slice(0, 200) : String(e.message ?? e)
}

/** A receiver's words, for the operator: no NUL (PostgreSQL text cannot hold it), bounded. */
const toExcerpt = (chunks: ReadonlyArray<Buffer>) =>
  Buffer.concat(chunks).toString("utf8").replace(/\u0000/g, "").slice(0, answerExcerptLength)

export class WebhookTransport extends Context.Service<WebhookTransport, {
  /**
   * POSTs `body` to `url`: resolves the host, refuses a guarded address
   * (unless private URLs are allowed), connects to the address it checked,
   * never follows a redirect, reads at most 64 KiB of the answer, and gives
   * up after `WEBHOOK_TIMEOUT_MS`. Never fails: every outcome is a result.
   */
  readonly send: (url: string, headers: Readonly<Record<string, string>>, body: string) => Effect.Effect<AttemptResult>
}>()("hearken/WebhookTransport") {
  static readonly layer = Layer.effect(
    WebhookTransport,
    Effect.gen(function*() {
      const config = yield* WebhookConfig
      const agents = yield* Effect.acquireRelease(
        Effect.sync(() => ({
          // As many sockets per host as a worker has attempts in flight: none waits in the agent's queue.
          http: new HttpAgent({ keepAlive: true, maxSockets: maxInFlight, timeout: 30_000 }),
          https: new HttpsAgent({ keepAlive: true, maxSockets: maxInFlight, timeout: 30_000 })
        })),
        (agents) => Effect.sync(() => (agents.http.destroy(), agents.https.destroy()))
      )

      const resolve = Effect.fnUntraced(function*(raw: string) {
        if (!URL.canParse(raw)) return { _tag: "Refused", reason: "not a valid URL" } as const
        const url = new URL(raw)
        if (url.protocol !== "http:" && url.protocol !== "https:") {
          return { _tag: "Refused", reason: "only http and https URLs are allowed" } as const
        }
        const host = hostOf(url)
        const found = yield* Effect.tryPromise(() => dnsLookup(host, { all: true, verbatim: true })).pipe(Effect.result)
        if (found._tag === "Failure") {
          return { _tag: "NetworkError", message: `cannot resolve ${host}: ${errorMessage(found.failure.cause)}` } as const
        }
        const addresses = found.success
        if (addresses.length === 0) return { _tag: "NetworkError", message: `${host} has no address` } as const
        if (!config.webhookAllowPrivateUrls) {
          for (const { address } of addresses) {
            const range = blockedRange(address)
            if (range !== undefined) {
              const where = address === host ? address : `${host} resolves to ${address}, which`
              return { _tag: "Refused", reason: `${where} is in a blocked range (${range})` } as const
            }
          }
        }
        const [first] = addresses
        return { _tag: "Target", target: { url, address: first!.address, family: first!.family } } as const
      })

      /** What arrived so far, so that a timeout after the status line still reports the answer. */
      interface Progress {
        response?: IncomingMessage
        readonly chunks: Array<Buffer>
      }

      const answered = (progress: Progress & { response: IncomingMessage }): AttemptResult => ({
        _tag: "Answered",
        status: progress.response.statusCode ?? 0,
        retryAfter: [progress.response.headers["retry-after"]].flat()[0],
        excerpt: toExcerpt(progress.chunks)
      })

      const post = (target: Target, headers: Readonly<Record<string, string>>, body: string, progress: Progress) =>
        Effect.callback<AttemptResult>((resume) => {
          let done = false
          const finish = (result: AttemptResult) => {
            if (done) return
            done = true
            resume(Effect.succeed(result))
          }
          const https = target.url.protocol === "https:"
          let request: ClientRequest
          try {
            request = (https ? httpsRequest : httpRequest)(target.url, {
              method: "POST",
              headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
              agent: https ? agents.https : agents.http,
              lookup: pinnedLookup(target.address, target.family)
            }, onResponse)
          } catch (error) {
            finish({ _tag: "NetworkError", message: errorMessage(error) })
            return
          }
          function onResponse(response: IncomingMessage) {
            const current = Object.assign(progress, { response })
            let size = 0
            response.on("data", (chunk: Buffer) => {
              const room = maxResponseBytes - size
              progress.chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk)
              size += Math.min(chunk.length, room)
              if (size >= maxResponseBytes) {
                response.destroy()
                finish(answered(current))
              }
            })
            response.on("end", () => finish(answered(current)))
            response.on("error", () => finish(answered(current)))
            response.on("close", () => finish(answered(current)))
          }
          request.on("error", (error) => finish({ _tag: "NetworkError", message: errorMessage(error) }))
          request.end(body)
          return Effect.sync(() => request.destroy())
        })

      /** One deadline covers resolving, connecting, the answer's status and its body. */
      const send = (url: string, headers: Readonly<Record<string, string>>, body: string) => {
        const progress: Progress = { chunks: [] }
        return Effect.gen(function*() {
          const resolved = yield* resolve(url)
          return resolved._tag === "Target" ? yield* post(resolved.target, headers, body, progress) : resolved
        }).pipe(
          Effect.timeoutOrElse({
            duration: config.webhookTimeoutMs,
            orElse: () =>
              Effect.succeed<AttemptResult>(
                progress.response === undefined
                  ? { _tag: "TimedOut", afterMs: config.webhookTimeoutMs }
                  : answered({ ...progress, response: progress.response })
              )
          })
        )
      }

      return WebhookTransport.of({ send })
    })
  )
}
