import { Redis } from "ioredis"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { baseFixture } from "./support/fixtures.js"
import { send } from "./support/http.js"
import { OwnRedis, testRedisUrl } from "./support/redis.js"
import { startSeededServer, useServer } from "./support/server.js"

const draft = { organizationId: "org_acme", boardId: "b_feat", title: "dark mode", content: "" }
const feedback = { organizationId: "org_acme", boardId: "b_feat", title: "Rate limited", content: "" }

const flushTestRedis = async () => {
  const redis = new Redis(testRedisUrl)
  await redis.flushdb()
  redis.disconnect()
}

const countStatuses = (statuses: Array<number>) =>
  statuses.reduce<Record<number, number>>((out, s) => ({ ...out, [s]: (out[s] ?? 0) + 1 }), {})

describe.each([
  ["Redis", { REDIS_URL: testRedisUrl }],
  ["the in-process limiter", {}]
] as const)("rate limits with %s", (name, env) => {
  beforeAll(async () => {
    if (name === "Redis") await flushTestRedis()
  })
  const server = useServer(() => startSeededServer(baseFixture(), { RATE_LIMIT_MULTIPLIER: "1", ...env }))

  it("lets exactly 5 of 50 concurrent suggestions from one IP through; the rest get 429", async () => {
    const results = await Promise.all(
      Array.from({ length: 50 }, () => send(`${server.api}/suggestions`, { from: "127.0.0.2", body: draft }))
    )
    expect(countStatuses(results.map((r) => r.status))).toEqual({ 200: 5, 429: 45 })
    const ok = results.filter((r) => r.status === 200)
    expect(ok.map((r) => r.headers["ratelimit-limit"])).toEqual(Array(5).fill("5"))
    expect(ok.map((r) => r.headers["ratelimit-remaining"]).sort()).toEqual(["0", "1", "2", "3", "4"])
    for (const r of results.filter((r) => r.status === 429)) {
      expect(r.body._tag).toBe("RateLimitExceededError")
      expect(r.headers["retry-after"]).toMatch(/^[1-9]\d*$/)
      expect(Number(r.headers["retry-after"])).toBeLessThanOrEqual(12)
      expect(r.headers["ratelimit-remaining"]).toBe("0")
      expect(r.headers["ratelimit-limit"]).toBe("5")
      expect(Number(r.headers["ratelimit-reset"])).toBeGreaterThan(0)
      expect(Number(r.headers["ratelimit-reset"])).toBeLessThanOrEqual(60)
    }
  })

  it("leaves a second IP unaffected", async () => {
    const res = await send(`${server.api}/suggestions`, { from: "127.0.0.3", body: draft })
    expect(res.status).toBe(200)
    expect(res.headers["ratelimit-remaining"]).toBe("4")
  })

  it("keeps a budget per endpoint", async () => {
    // 127.0.0.2 spent its suggestions above; other endpoints have their own budgets.
    const boards = await send(`${server.api}/boards?organizationId=org_acme`, { from: "127.0.0.2" })
    expect(boards.status).toBe(200)
    expect(boards.headers["ratelimit-limit"]).toBe("120")
    expect(boards.headers["ratelimit-remaining"]).toBe("119")
    const updates = await send(`${server.api}/updates?organizationId=org_acme`, { from: "127.0.0.2" })
    expect(updates.headers["ratelimit-remaining"]).toBe("119")
    const post = await send(`${server.api}/feedback`, { from: "127.0.0.2", body: feedback })
    expect(post.status).toBe(200)
    expect(post.headers["ratelimit-limit"]).toBe("20")
  })

  it("allows 20 feedback posts a minute and 120 board listings", async () => {
    // The buckets refill (one post every 3 s, one listing every 500 ms): a slow machine may fit a few
    // more in, never fewer, and never more than the refills during the run allow.
    let started = performance.now()
    const posts: Array<number> = []
    while (posts.length < 40 && posts.at(-1) !== 429) {
      posts.push((await send(`${server.api}/feedback`, { from: "127.0.0.4", body: feedback })).status)
    }
    const postRefills = Math.floor((performance.now() - started) / 3_000) + 1
    expect(posts.at(-1)).toBe(429)
    expect(posts.slice(0, -1).every((s) => s === 200)).toBe(true)
    expect(posts.length - 1).toBeGreaterThanOrEqual(20)
    expect(posts.length - 1).toBeLessThanOrEqual(20 + postRefills)
    started = performance.now()
    const listings = await Promise.all(
      Array.from({ length: 140 }, () => send(`${server.api}/boards?organizationId=org_acme`, { from: "127.0.0.5" }))
    )
    const listingRefills = Math.floor((performance.now() - started) / 500) + 1
    const counted = countStatuses(listings.map((r) => r.status))
    expect(Object.keys(counted).sort()).toEqual(["200", "429"])
    expect(counted[200]).toBeGreaterThanOrEqual(120)
    expect(counted[200]).toBeLessThanOrEqual(120 + listingRefills)
  })

  it("counts refused requests and puts the headers on them too", async () => {
    const res = await send(`${server.api}/feedback`, { from: "127.0.0.11", body: { title: 1 } })
    expect(res.status).toBe(400)
    expect(res.headers["ratelimit-limit"]).toBe("20")
    expect(res.headers["ratelimit-remaining"]).toBe("19")
  })

  it("ignores a spoofed X-Forwarded-For when no proxy is trusted", async () => {
    const statuses = []
    for (let i = 0; i < 6; i++) {
      const res = await send(`${server.api}/suggestions`, {
        from: "127.0.0.7",
        body: draft,
        headers: { "x-forwarded-for": `198.51.100.${i}, 203.0.113.${i}` }
      })
      statuses.push(res.status)
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429])
  })

  it("limits /docs and /docs/openapi.json like the API: 30 a minute per IP, one budget for both", async () => {
    const started = performance.now()
    const documents = await Promise.all(
      Array.from({ length: 30 }, () => send(`${server.origin}/docs/openapi.json`, { from: "127.0.0.12" }))
    )
    expect(documents.map((r) => r.status)).toEqual(Array(30).fill(200))
    expect(documents.map((r) => r.headers["ratelimit-limit"])).toEqual(Array(30).fill("30"))
    // One request comes back every 2 s: a slow machine may see a few more pages, never an unlimited run.
    const pages: Array<Awaited<ReturnType<typeof send>>> = []
    while (pages.length < 10 && pages.at(-1)?.status !== 429) {
      pages.push(await send(`${server.origin}/docs`, { from: "127.0.0.12", headers: { "accept-encoding": "gzip" } }))
    }
    const refills = Math.floor((performance.now() - started) / 2_000) + 1
    const refused = pages.at(-1)!
    expect(refused.status).toBe(429)
    expect(pages.length - 1).toBeLessThanOrEqual(refills)
    expect(refused.headers["content-type"]).toMatch(/^application\/json/)
    expect(refused.body).toEqual({ _tag: "RateLimitExceededError", message: expect.stringMatching(/^At most 30 requests per minute/) })
    expect(refused.headers["retry-after"]).toMatch(/^[1-9]\d*$/)
    expect(refused.headers["ratelimit-limit"]).toBe("30")
    expect(refused.headers["ratelimit-remaining"]).toBe("0")
    expect(refused.headers["content-encoding"]).toBeUndefined()
    // Another address has its own budget.
    expect((await send(`${server.origin}/docs/openapi.json`, { from: "127.0.0.13" })).headers["ratelimit-remaining"]).toBe("29")
  })

  it("does not cover /health", async () => {
    for (let i = 0; i < 8; i++) {
      const res = await send(`${server.origin}/health`, { from: "127.0.0.2" })
      expect(res.status).toBe(200)
      expect(res.headers["ratelimit-limit"]).toBeUndefined()
    }
  })
})

describe("two API instances on one Redis", () => {
  beforeAll(flushTestRedis)
  const env = { RATE_LIMIT_MULTIPLIER: "1", REDIS_URL: testRedisUrl }
  const a = useServer(() => startSeededServer(baseFixture(), env))
  const b = useServer(() => startSeededServer(baseFixture(), env))

  it("share one budget", async () => {
    const statuses = []
    for (const server of [a, b, a, b, a, b, a]) {
      statuses.push((await send(`${server.api}/suggestions`, { from: "127.0.0.6", body: draft })).status)
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429])
  })
})

describe("behind one trusted proxy (TRUST_PROXY=1)", () => {
  beforeAll(flushTestRedis)
  const server = useServer(() =>
    startSeededServer(baseFixture(), { RATE_LIMIT_MULTIPLIER: "1", REDIS_URL: testRedisUrl, TRUST_PROXY: "1" })
  )
  /** Every request arrives from the proxy's address; only the forwarded one tells clients apart. */
  const viaProxy = (forwardedFor: string | Array<string>) =>
    send(`${server.api}/suggestions`, { from: "127.0.0.8", body: draft, headers: { "x-forwarded-for": forwardedFor } })
  const spend = async (forwardedFor: string, times = 5) => {
    for (let i = 0; i < times; i++) expect((await viaProxy(forwardedFor)).status).toBe(200)
  }

  it("limits by the address the proxy saw, whatever the client wrote to its left", async () => {
    await spend("203.0.113.7")
    expect((await viaProxy("203.0.113.7")).status).toBe(429)
    expect((await viaProxy("10.9.8.7, 203.0.113.7")).status).toBe(429)
    expect((await viaProxy(["1.1.1.1", "203.0.113.7"])).status).toBe(429)
    expect((await viaProxy("203.0.113.7, 203.0.113.99")).status).toBe(200)
  })

  it("buckets IPv6 clients by /64", async () => {
    await spend("2001:db8:1:2::1")
    expect((await viaProxy("2001:db8:1:2:ffff:ffff:ffff:fffe")).status).toBe(429)
    expect((await viaProxy("[2001:db8:1:2:abcd::9]:4711")).status).toBe(429)
    expect((await viaProxy("2001:db8:1:3::1")).status).toBe(200)
  })

  it("keeps two IPv4-mapped addresses in separate buckets, the same as their plain IPv4", async () => {
    await spend("::ffff:198.51.100.1")
    expect((await viaProxy("::ffff:198.51.100.1")).status).toBe(429)
    expect((await viaProxy("198.51.100.1")).status).toBe(429)
    expect((await viaProxy("::ffff:198.51.100.2")).status).toBe(200)
  })
})

describe("IPv4 clients of a dual-stack listener (HOST=::)", () => {
  beforeAll(flushTestRedis)
  const server = useServer(() =>
    startSeededServer(baseFixture(), { RATE_LIMIT_MULTIPLIER: "1", REDIS_URL: testRedisUrl, HOST: "::" })
  )

  it("arrive as ::ffff:a.b.c.d and keep one bucket each", async () => {
    for (let i = 0; i < 5; i++) expect((await send(`${server.api}/suggestions`, { from: "127.0.0.9", body: draft })).status).toBe(200)
    expect((await send(`${server.api}/suggestions`, { from: "127.0.0.9", body: draft })).status).toBe(429)
    expect((await send(`${server.api}/suggestions`, { from: "127.0.0.10", body: draft })).status).toBe(200)
  })
})

describe("when Redis fails", () => {
  let redis: OwnRedis
  beforeAll(async () => {
    redis = await OwnRedis.start()
  })
  afterAll(() => redis?.kill())
  const server = useServer(() =>
    startSeededServer(baseFixture(), { RATE_LIMIT_MULTIPLIER: "1000", REDIS_URL: redis.url })
  )
  const boards = (from = "127.0.0.12") => send(`${server.api}/boards?organizationId=org_acme`, { from })

  const waitFor200 = async (timeoutMs: number) => {
    const started = performance.now()
    for (;;) {
      if ((await boards()).status === 200) return performance.now() - started
      if (performance.now() - started > timeoutMs) throw new Error(`no recovery within ${timeoutMs} ms`)
      await new Promise((r) => setTimeout(r, 100))
    }
  }

  it("answers 503 within 1 s when Redis is stopped, and recovers by itself when it is back", async () => {
    expect((await boards()).status).toBe(200)
    await redis.kill()
    const latencies = []
    for (let i = 0; i < 3; i++) {
      const res = await boards()
      expect(res.status).toBe(503)
      expect(res.body._tag).toBe("RateLimitUnavailableError")
      expect(res.headers["retry-after"]).toBe("1")
      expect(res.ms).toBeLessThan(1_000)
      latencies.push(Math.round(res.ms))
    }
    console.info(`503 with Redis stopped after ${latencies.join(", ")} ms`)
    expect((await send(`${server.origin}/health`)).status).toBe(200)
    await redis.restart()
    // The new Redis has lost the script: the limiter must reload it (NOSCRIPT) without help.
    const recoveredMs = await waitFor200(5_000)
    console.info(`rate limiter recovered ${Math.round(recoveredMs)} ms after Redis restarted`)
  }, 20_000)

  it("answers 503 within about 600 ms when Redis is frozen, and recovers when it thaws", async () => {
    await waitFor200(5_000)
    redis.freeze()
    try {
      const res = await boards()
      expect(res.status).toBe(503)
      expect(res.body._tag).toBe("RateLimitUnavailableError")
      expect(res.ms).toBeLessThan(800)
      console.info(`503 with Redis frozen after ${Math.round(res.ms)} ms`)
      expect((await send(`${server.origin}/health`)).status).toBe(200)
    } finally {
      redis.thaw()
    }
    await waitFor200(5_000)
  }, 20_000)
})

describe("the limits table (decision 0012)", () => {
  it("has exactly one limit per widget endpoint and one for /docs, and the OpenAPI descriptions quote them", async () => {
    const { HearkenApi, RateLimits } = await import("@hearken/api/effect")
    const { OpenApi } = await import("effect/http-api")
    const spec = OpenApi.fromApi(HearkenApi) as any
    const widget = Object.entries<Record<string, any>>(spec.paths).filter(([path]) => path.startsWith("/api/widget/v1/"))
    const identifiers = widget.map(([path]) => path.slice("/api/widget/v1/".length)).sort()
    expect(Object.keys(RateLimits).sort()).toEqual([...identifiers, "docs"].sort())
    expect(spec.info.description).toContain(`GET /docs and GET /docs/openapi.json`)
    expect(spec.info.description).toContain(`Rate limit: ${RateLimits.docs} per minute per IP.`)
    for (const [path, item] of widget) {
      const operation = Object.values(item)[0]
      const endpoint = path.slice("/api/widget/v1/".length) as keyof typeof RateLimits
      expect(operation.description).toContain(`Rate limit: ${RateLimits[endpoint]} per minute per IP.`)
    }
  })

  it("refuses to serve an endpoint it has no limit for, instead of serving it unlimited", async () => {
    const { Effect, Exit } = await import("effect")
    const { limitFor } = await import("../packages/server/src/rate-limit/RateLimitGate.js")
    expect(await Effect.runPromise(limitFor({ boards: 120 }, "boards"))).toBe(120)
    const missing = await Effect.runPromiseExit(limitFor({ boards: 120 }, "boardz"))
    expect(Exit.isFailure(missing) && Exit.hasDies(missing)).toBe(true)
    const inherited = await Effect.runPromiseExit(limitFor({ boards: 120 }, "toString"))
    expect(Exit.isFailure(inherited)).toBe(true)
  })
})
