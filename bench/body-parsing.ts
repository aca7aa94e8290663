/**
 * `node bench/body-parsing.ts` (after `npm run build`): what a hostile request
 * body costs the event loop (docs/decisions/0029-request-bodies-and-sockets.md).
 * The server starts as `npm start` starts it (the V8 flags of decision 0011,
 * the embedded PGlite in memory, the in-process rate limiter, lifted ×1000).
 * For each body, one client posts it `rounds` times to `POST /feedback`, one
 * after another, while `/health` is asked every 10 ms on a connection of its
 * own: a `/health` answer waits for whatever holds the event loop, so its
 * worst latency is the longest stretch one body held it. `quiet` posts
 * nothing, for the floor. Bounded: about 10 s per body, loopback only.
 *
 * `/health` on a shared 2-core machine is noisy, so each body's synchronous
 * cost is also timed directly, in this process (median of 20): what the edge
 * does now (UTF-8 check, then the shape pre-scan, then, if that passes,
 * `JSON.parse` and the payload's decoding) and what it did before (the same
 * without the pre-scan).
 *
 * `--size KIB` sets the hostile bodies' size (default 1024: the issue's case;
 * the limit is 512 KiB now, so those are refused by their size).
 */
import { FeedbackRequest, Limits } from "@hearken/api/effect"
import { Schema } from "effect"
import { Agent, request } from "node:http"
import { shapeError } from "../packages/server/dist/http/BodyLimits.js"
import { percentile, startProcess } from "./support.ts"

const args = process.argv.slice(2)
const sizeKiB = args.includes("--size") ? Number(args[args.indexOf("--size") + 1]) : 1024
const rounds = 10
const size = sizeKiB * 1024

const valid = { organizationId: "org_demo", boardId: "b_demo_features", title: "Body cost", content: "<p>c</p>" }
const prefix = JSON.stringify(valid).slice(0, -1)
/** `valid` with an ignored field `x` whose JSON is `value`, the whole about `size` bytes. */
const withIgnored = (value: string) => `${prefix},"x":${value}}`
const room = size - prefix.length - 10
const repeated = (unit: string, count: number) => `[${Array<string>(count).fill(unit).join(",")}]`
const metadataOf = (count: number, value: string) =>
  `{${Array.from({ length: count }, (_, i) => `"k${i}":${value}`).join(",")}}`
const emoji = "\u{1F600}"
/** Every field at its limit, every character an astral one written as two `\u` escapes (12 bytes). */
const largestValid = JSON.stringify({
  ...valid,
  title: emoji.repeat(Limits.title),
  content: emoji.repeat(Limits.content),
  metadata: Object.fromEntries(
    Array.from({ length: Limits.metadataProperties }, (_, i) => [String(i).padStart(2, "0") + emoji.repeat(Limits.metadataKey - 2), emoji.repeat(Limits.metadataValue)])
  ),
  token: emoji.repeat(Limits.token)
}).replace(/[\u{10000}-\u{10FFFF}]/gu, (c) => `\\u${c.charCodeAt(0).toString(16)}\\u${c.charCodeAt(1).toString(16)}`)

const bodies: Record<string, string | undefined> = {
  quiet: undefined,
  small: JSON.stringify(valid),
  largestValidEscaped: largestValid,
  nestedArrays: withIgnored(`${"[".repeat(room / 2)}${"]".repeat(room / 2)}`),
  wideArrays: withIgnored(repeated("[]", Math.floor(room / 3))),
  wideNested4: withIgnored(repeated("[[[[]]]]", Math.floor(room / 9))),
  manyMetadataKeys: `${prefix},"metadata":${metadataOf(Math.floor(room / 12), '""')}}`
}

const utf8 = new TextDecoder("utf-8", { fatal: true })
const decode = Schema.decodeUnknownExit(FeedbackRequest)
const parseAndDecode = (text: string) => {
  try {
    decode(JSON.parse(text))
  } catch {
    // malformed: the parser's cost is what counts
  }
}
const median = (run: () => void) => {
  const times: Array<number> = []
  for (let i = 0; i < 20; i++) {
    const started = performance.now()
    run()
    times.push(performance.now() - started)
  }
  return Number(percentile(times.sort((a, b) => a - b), 0.5).toFixed(2))
}
const directCost = (body: string) => {
  const bytes = new TextEncoder().encode(body)
  return {
    beforeMs: median(() => parseAndDecode(utf8.decode(bytes))),
    nowMs: median(() => {
      const text = utf8.decode(bytes)
      if (shapeError(bytes) === undefined) parseAndDecode(text)
    })
  }
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 })
const post = (origin: string, body: string) =>
  new Promise<{ status: number; ms: number; text: string }>((resolve, reject) => {
    const started = performance.now()
    const req = request(`${origin}/api/widget/v1/feedback`, {
      method: "POST",
      agent,
      headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) }
    }, (res) => {
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (chunk) => (text += chunk))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, text }))
    })
    req.on("error", reject)
    req.end(body)
  })

const pollHealth = (origin: string) => {
  const latencies: Array<number> = []
  const healthAgent = new Agent({ keepAlive: true, maxSockets: 1 })
  let running = true
  const done = (async () => {
    while (running) {
      const started = performance.now()
      await new Promise<void>((resolve) => {
        request(`${origin}/health`, { agent: healthAgent }, (res) => res.resume().on("end", resolve)).on("error", () => resolve()).end()
      })
      latencies.push(performance.now() - started)
      await new Promise((r) => setTimeout(r, 10))
    }
  })()
  return { latencies, stop: async () => ((running = false), await done, healthAgent.destroy()) }
}

const server = await startProcess("main.js", { PGLITE_DIR: "memory", RATE_LIMIT_MULTIPLIER: "1000" })
try {
  for (const [name, body] of Object.entries(bodies)) {
    const health = pollHealth(server.origin)
    const answers: Array<{ status: number; ms: number; text: string }> = []
    if (body === undefined) await new Promise((r) => setTimeout(r, 2_000))
    else for (let i = 0; i < rounds; i++) answers.push(await post(server.origin, body))
    await health.stop()
    const sorted = [...health.latencies].sort((a, b) => a - b)
    const requestMs = answers.map((a) => a.ms).sort((a, b) => a - b)
    console.log(JSON.stringify({
      body: name,
      bytes: body === undefined ? 0 : Buffer.byteLength(body),
      statuses: [...new Set(answers.map((a) => a.status))],
      answer: answers[0]?.text.slice(0, 100),
      ...(body === undefined ? {} : { directCost: directCost(body) }),
      requestMedianMs: requestMs.length === 0 ? undefined : Math.round(percentile(requestMs, 0.5)),
      healthP50Ms: Math.round(percentile(sorted, 0.5)),
      healthMaxMs: Math.round(sorted.at(-1)!),
      healthPolls: sorted.length
    }))
  }
} finally {
  agent.destroy()
  await server.stop()
}
