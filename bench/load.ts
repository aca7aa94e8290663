/**
 * `npm run bench`: Hearken's three hot endpoints under load, against the raw
 * baseline (`baseline.ts`: plain `node:http`, `pg` and `ioredis` doing the
 * same database, Redis and sanitizer work), both as processes on the local
 * PostgreSQL and Redis.
 *
 * Data, generated into a fresh database (BENCH_DATABASE_URL, default
 * postgres://postgres@127.0.0.1:5432/postgres, is the admin URL; BENCH_KEEP=1
 * keeps the database) after the server's migrations, by SQL:
 * - 2 organizations, each with 4 statuses (the default not the first) and 10
 *   boards (8 public, 2 private);
 * - `--posts N` posts (default 10,000), half in each organization, over all
 *   its boards: titles repeat as they do on real boards (a third from a short
 *   list of common requests, "Dark mode" the most common, the rest from the
 *   labelled set's titles, six languages), bodies from the labelled set's
 *   texts with lists and links, stored as the server stores them (sanitized,
 *   excerpt, lexicon columns by the server's `lexiconOf`, slugs `base`,
 *   `base-2`, … as its allocation makes them). Up to 10,000 distinct posts
 *   per organization are generated in JS; more cycle over them, each with its
 *   own slug, in one INSERT … SELECT generate_series;
 * - `--updates N` changelog entries (default 200), half in each organization,
 *   authored HTML with headings, lists, images, tables and what the sanitizer
 *   strips (scripts, event handlers, `javascript:` links); 1 in 20 a draft and
 *   1 in 20 scheduled in the future, the rest published.
 *
 * Load (the default mode): Hearken (`main.js`) and the baseline, each with
 * REDIS_URL (BENCH_REDIS_URL, default redis://127.0.0.1:6379/14) and the same
 * RATE_LIMIT_MULTIPLIER (100000: the only way limits are raised), are loaded
 * alternately, Hearken then the baseline, BENCH_ROUNDS times (default 2) per
 * endpoint, by autocannon in this process: each run BENCH_DURATION seconds
 * (default 10) at BENCH_CONNECTIONS connections (default 50), after a
 * BENCH_WARMUP-second warm-up (default 3) at the same connections. Requests
 * rotate over both organizations; the GETs send no If-None-Match, so each is
 * a full 200 (after the first, from the answer cached for the current ETag:
 * posts do not change it). POST /feedback bodies rotate over 500 prepared
 * ones (every public board, repeated titles, HTML bodies with what the
 * sanitizer strips, metadata); the first post of each title after the seed
 * starts its slug counter, during the warm-up. Before loading, both servers
 * must answer GET /boards and GET /updates identically (bodies and ETags)
 * and store the same post for the same POST /feedback. Each server's VmRSS
 * is read from /proc before the load, every 250 ms during its runs, and its
 * VmHWM at the end. Latencies are those of every 2xx answer (autocannon's own
 * histogram keeps whole milliseconds only).
 * Reported per endpoint: req/s (mean of rounds), p50 and p99 latency (mean of
 * rounds), non-2xx answers and connection errors (sum), peak RSS, and the
 * ratios Hearken/baseline, checked against decision 0011's targets (reported,
 * not enforced): GET /boards and GET /updates at least 0.8× the baseline's
 * req/s, POST /feedback at least 0.5×, p99 at most 2× the baseline's on every
 * endpoint, Hearken's peak RSS under load at most 250 MB.
 *
 * `--smoke`: 100 posts, 10 updates, 1 round of 2 s runs after 1 s warm-ups at
 * 10 connections (what the test suite runs, so that the bench cannot rot).
 *
 * `--growth`: how time and bytes grow, sequential requests (no load), both
 * servers:
 * - GET /updates with 10, 1,000 and 10,000 published entries in the
 *   organization (each entry's HTML distinct): the first answer after the
 *   write (no cached answer, sanitizer cache cold for the new entries), then
 *   p50 over up to 20 more (at most ~5 s, at least 3), and the answer's size;
 * - POST /feedback with 10k, 100k and 1M posts in the organization
 *   (`--growth-max N` caps the largest, default 1,000,000; each size filled by
 *   one INSERT … SELECT generate_series): first one post for each of the 20
 *   common titles (p50: what starting a title's slug counter costs after an
 *   import), then p50 over 30 posts with those titles (the steady cost), and
 *   the size of the posts table with its indexes.
 *
 * `--soak [SECONDS]` (default 600): Hearken alone under mixed load (GET
 * /boards, GET /updates, POST /feedback in turn, both organizations) at
 * BENCH_CONNECTIONS for SECONDS, VmRSS sampled every second: RSS when the
 * warm-up (a fifth of the run, at most 60 s) ends, at the end, the maximum,
 * and the slope after warm-up (least squares, MB per minute).
 *
 * `--observability`: what the Prometheus metrics cost. Two Hearken processes
 * on the same data, one without METRICS_PORT (no exporter: the default) and
 * one with it, scraped once a second during its runs, are loaded alternately
 * on GET /boards (the cheapest request, where a fixed cost per request shows
 * most), BENCH_ROUNDS times each, as in load mode. Reports req/s, p50 and p99
 * of each and their ratio.
 *
 * Load mode (and `--smoke`) first prints and records the gzip sizes of the
 * thin client, the widget's first download and each of its languages
 * (`sizes.ts`; `npm run build` makes them).
 *
 * Results go to BENCH_RESULTS (default bench/results.json; results-growth.json
 * and results-soak.json for the other modes) and a Markdown table to stdout.
 */
import autocannon from "autocannon"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { deepStrictEqual } from "node:assert/strict"
import { writeFileSync } from "node:fs"
import { cpus } from "node:os"
import { join } from "node:path"
import { make as makeSanitizer, truncate } from "../packages/server/dist/content/Sanitizer.js"
import { slugify } from "../packages/server/dist/content/slug.js"
import { excerptLength } from "../packages/server/dist/feedback/Feedback.js"
import { lexiconOf } from "../packages/server/dist/lexicon/lexicon.js"
import { migrate } from "../packages/server/dist/sql/Database.js"
import { loadDataset } from "./suggestions/dataset.ts"
import { bundleSizes, printBundleSizes } from "./sizes.ts"
import { freshDatabase, memory, percentile, startProcess, withSql } from "./support.ts"
import { freePort } from "../test/support/net.ts"

// ---------------------------------------------------------------- knobs

const argv = process.argv.slice(2)
const flag = (name: string) => argv.includes(`--${name}`)
/** `--name N`: N, `fallback` when the flag is absent, `bare` when it has no number. */
const option = (name: string, fallback: number | undefined, bare = fallback) => {
  const i = argv.indexOf(`--${name}`)
  if (i === -1) return fallback
  const value = argv[i + 1]
  if (value === undefined || value.startsWith("--")) return bare
  const n = Number(value.replaceAll("_", "").replaceAll(",", ""))
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} expects a number, got ${value}`)
  return n
}
const envNumber = (name: string, fallback: number) => {
  const value = process.env[name]
  return value === undefined || value === "" ? fallback : Number(value)
}

const smoke = flag("smoke")
const growth = flag("growth")
const soakSeconds = option("soak", undefined, 600)
const observability = flag("observability")
const mode = growth ? "growth" : soakSeconds !== undefined ? "soak" : observability ? "observability" : "load"
const postCount = option("posts", smoke ? 100 : 10_000)!
const updateCount = option("updates", smoke ? 10 : 200)!
const growthMax = option("growth-max", 1_000_000)!
const rounds = envNumber("BENCH_ROUNDS", smoke ? 1 : 2)
const connections = envNumber("BENCH_CONNECTIONS", smoke ? 10 : 50)
const duration = envNumber("BENCH_DURATION", smoke ? 2 : 10)
const warmup = envNumber("BENCH_WARMUP", smoke ? 1 : 3)
const redisUrl = process.env["BENCH_REDIS_URL"] ?? "redis://127.0.0.1:6379/14"
const rateLimitMultiplier = "100000"
const resultsPath = process.env["BENCH_RESULTS"] ??
  join(import.meta.dirname, mode === "load" ? "results.json" : `results-${mode}.json`)

const api = "/api/widget/v1"
const targets = { readRatio: 0.8, writeRatio: 0.5, p99Ratio: 2, rssMb: 250 }

// ---------------------------------------------------------------- generated data

/** A deterministic generator (mulberry32), so that two runs load the same data. */
const random = (() => {
  let state = 0x5eed
  return () => {
    state = (state + 0x6d2b79f5) | 0
    let t = Math.imul(state ^ (state >>> 15), 1 | state)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
})()
const pick = <A>(items: ReadonlyArray<A>) => items[Math.floor(random() * items.length)]!

const organizations = [{ id: "org_bench_1", name: "Acme" }, { id: "org_bench_2", name: "Globex" }] as const
type Organization = (typeof organizations)[number]

const boardNames: ReadonlyArray<readonly [string, "public" | "private"]> = [
  ["Feature requests", "public"], ["Bug reports", "public"], ["Integrations", "public"], ["Mobile app", "public"],
  ["API", "public"], ["Billing", "public"], ["Design", "public"], ["Performance", "public"],
  ["Internal roadmap", "private"], ["Security reports", "private"]
]
const boardsOf = (org: Organization) =>
  boardNames.map(([name, visibility], i) => ({ id: `${org.id}_b${i}`, name, slug: slugify(name), visibility }))
const publicBoardsOf = (org: Organization) => boardsOf(org).filter((b) => b.visibility === "public")
const statusSuffixes = ["_st_review", "_st_open", "_st_planned", "_st_done"]

const dataset = loadDataset()
const sanitizer = makeSanitizer()

/** What many customers ask for, in the words they use: these titles repeat most. */
const commonTitles = [
  "Dark mode", "Export to CSV", "Single sign-on (SSO)", "Slack integration", "Mobile app", "API access",
  "Custom domain", "Two-factor authentication", "Zapier integration", "Bulk edit", "Keyboard shortcuts",
  "Calendar view", "Jira integration", "Custom fields", "Email notifications", "Multi-language support",
  "Offline mode", "Webhooks", "Audit log", "Recurring tasks"
]
const zipfCommon = (() => {
  const weights = commonTitles.map((_, i) => 1 / (i + 1))
  const total = weights.reduce((a, b) => a + b, 0)
  return () => {
    let r = random() * total
    for (let i = 0; i < weights.length; i++) if ((r -= weights[i]!) <= 0) return commonTitles[i]!
    return commonTitles[0]!
  }
})()
// A title whose slug ends in -N could collide with another title's Nth slug: left out of the generated posts.
const datasetTitles = dataset.posts.map((p) => p.title).filter((t) => !/-\d+$/.test(slugify(t)))
const title = (commonShare: number) => (random() < commonShare ? zipfCommon() : pick(datasetTitles))

const paragraphs = dataset.posts.map((p) => p.content)
const words = paragraphs.join(" ").replace(/<[^>]+>/g, " ").split(/\s+/).filter((w) => /^\p{L}{4,}$/u.test(w))
const phrase = (n: number) => Array.from({ length: n }, () => pick(words)).join(" ")

/** A post body as a visitor writes it: the labelled set's texts, sometimes a list or a link. */
const postBody = () => {
  const parts = Array.from({ length: 1 + Math.floor(random() * 3) }, () => pick(paragraphs))
  if (random() < 0.3) parts.push(`<ul><li>${phrase(4)}</li><li>${phrase(6)}</li><li>${phrase(3)}</li></ul>`)
  if (random() < 0.2) parts.push(`<p>See <a href="https://example.com/${phrase(1)}">${phrase(2)}</a>.</p>`)
  return parts.join("")
}

/** A body from a widget: as above, with what the sanitizer must strip. */
const dirtyBody = () => {
  const body = postBody()
  const r = random()
  if (r < 0.15) return `${body}<script>alert(1)</script>`
  if (r < 0.3) return `${body}<p onclick="steal()">${phrase(5)} <a href="javascript:alert(1)">here</a></p>`
  if (r < 0.4) return `${body}<img src="https://example.com/x.png" onerror="alert(1)"><style>p{color:red}</style>`
  return body
}

/** Changelog HTML as an editor writes it (40 templates); each entry adds its own release line. */
const updateTemplates = Array.from({ length: 40 }, (_, i) => {
  const headline = `${pick(commonTitles)}: ${phrase(3)}`
  const html = [
    `<h2>${headline}</h2>`,
    ...Array.from({ length: 2 + (i % 4) }, () => pick(paragraphs)),
    `<h3>What changed</h3><ul>${Array.from({ length: 3 + (i % 5) }, () => `<li><strong>${phrase(2)}</strong> ${phrase(8)}</li>`).join("")}</ul>`,
    i % 3 === 0 ? `<p><img src="https://cdn.example.com/updates/${i}.png" alt="${phrase(3)}"></p>` : "",
    i % 4 === 0 ? `<table><tr><th>Plan</th><th>Limit</th></tr><tr><td>Pro</td><td>${i * 10}</td></tr></table>` : "",
    i % 5 === 0 ? `<p onmouseover="track()">${phrase(10)} <a href="javascript:void(0)">more</a></p><script>track()</script>` : "",
    i % 7 === 0 ? `<iframe src="https://video.example.com/${i}"></iframe><div data-x="1" style="color:red">${phrase(12)}</div>` : "",
    `<p>Read the <a href="https://docs.example.com/${i}" target="_blank">docs</a> or <em>reply</em> to this update.</p>`
  ].join("\n")
  return { headline, html, excerpt: truncate(sanitizer.text(html), excerptLength) }
})

/** Distinct posts per organization at most; a larger organization cycles over them. */
const maxTemplates = 10_000

interface PostTemplate {
  readonly title: string
  readonly content: string
  readonly text: string
  readonly excerpt: string
  readonly base: string
  /** How many earlier templates have the same slug base, and how many have it in all. */
  rank: number
  count: number
}

const postTemplates = (n: number): ReadonlyArray<PostTemplate> => {
  const templates = Array.from({ length: n }, () => {
    const t = title(0.3)
    const content = sanitizer.post(postBody())
    const text = sanitizer.text(content)
    return { title: t, content, text, excerpt: truncate(text, excerptLength), base: slugify(t), rank: 0, count: 0 }
  })
  const counts = new Map<string, number>()
  for (const t of templates) {
    t.rank = counts.get(t.base) ?? 0
    counts.set(t.base, t.rank + 1)
  }
  for (const t of templates) t.count = counts.get(t.base)!
  return templates
}

// ---------------------------------------------------------------- seeding

const sqlJson = (rows: unknown) => JSON.stringify(rows)

const seedOrganizations = (url: string) =>
  withSql(url, (sql) =>
    Effect.gen(function*() {
      yield* Effect.provideService(migrate, SqlClient.SqlClient, sql)
      for (const org of organizations) {
        yield* sql`INSERT INTO organizations (id, name) VALUES (${org.id}, ${org.name})`
        const statuses = ["Under review", "Open", "Planned", "Done"].map((name, i) => ({
          id: org.id + statusSuffixes[i]!, name, isDefault: i === 1, position: i
        }))
        yield* sql`INSERT INTO statuses (id, organization_id, name, is_default, position)
          SELECT s.id, ${org.id}, s.name, s."isDefault", s.position
          FROM jsonb_to_recordset(${sqlJson(statuses)}::jsonb) AS s(id text, name text, "isDefault" boolean, position int)`
        yield* sql`INSERT INTO boards (id, organization_id, name, slug, visibility, created_at, updated_at)
          SELECT b.id, ${org.id}, b.name, b.slug, b.visibility, now() - (b.n || ' days')::interval, now() - (b.n || ' hours')::interval
          FROM jsonb_to_recordset(${sqlJson(boardsOf(org).map((b, i) => ({ ...b, n: 100 - i })))}::jsonb)
            AS b(id text, name text, slug text, visibility text, n int)`
      }
      yield* sql`CREATE UNLOGGED TABLE bench_post_templates (
        organization_id text, k int, board_id text, visibility text, title text, content text, excerpt text,
        lexicon text, title_lexicon text, base text, rank int, count int, PRIMARY KEY (organization_id, k))`
    })
  )

/** Stores the templates of `org`'s posts: template k goes to board k mod 10, its lexicon by the server's function. */
const storeTemplates = async (url: string, org: Organization, templates: ReadonlyArray<PostTemplate>) => {
  const boards = boardsOf(org)
  for (let start = 0; start < templates.length; start += 1_000) {
    const rows = templates.slice(start, start + 1_000).map((t, i) => {
      const k = start + i
      const board = boards[k % boards.length]!
      const lexicons = lexiconOf({ boardId: board.id, title: t.title, text: t.text, visibility: board.visibility })
      return {
        k, board: board.id, visibility: board.visibility, title: t.title, content: t.content, excerpt: t.excerpt,
        lexicon: lexicons.lexicon, titleLexicon: lexicons.titleLexicon, base: t.base, rank: t.rank, count: t.count
      }
    })
    await withSql(url, (sql) =>
      sql`INSERT INTO bench_post_templates
        SELECT ${org.id}, t.k, t.board, t.visibility, t.title, t.content, t.excerpt, t.lexicon, t."titleLexicon", t.base, t.rank, t.count
        FROM jsonb_to_recordset(${sqlJson(rows)}::jsonb) AS t(k int, board text, visibility text, title text, content text,
          excerpt text, lexicon text, "titleLexicon" text, base text, rank int, count int)`
    )
  }
}

/**
 * Posts `from` to `to − 1` of `org`, in one statement: post g is template g
 * mod P; its slug is the template's base, numbered as the server's
 * allocation would have numbered it (`base`, `base-2`, …). A number the
 * server gave meanwhile (`--growth` posts between fills) is skipped. The
 * organization's slug counters are dropped, so that the server starts each
 * again from the highest number in use, as after an import.
 */
const fillPosts = (url: string, org: Organization, templateCount: number, from: number, to: number) =>
  withSql(url, (sql) =>
    Effect.gen(function*() {
      if (to > from) {
        yield* sql`INSERT INTO posts (id, organization_id, board_id, title, slug, content, excerpt, visibility, status_id,
            source, lexicon, title_lexicon, created_at, updated_at)
          SELECT ${org.id} || '_p' || g, ${org.id}, t.board_id, t.title,
            CASE WHEN o.occ = 0 THEN t.base ELSE t.base || '-' || (o.occ + 1) END,
            t.content, t.excerpt, t.visibility,
            ${org.id} || (ARRAY['_st_review', '_st_open', '_st_planned', '_st_done'])[1 + g % 4],
            'import', t.lexicon::tsvector, t.title_lexicon::tsvector, o.at, o.at
          FROM generate_series(${from}::int, ${to - 1}::int) AS g
          JOIN bench_post_templates t ON t.organization_id = ${org.id} AND t.k = g % ${templateCount}::int
          CROSS JOIN LATERAL (
            SELECT (g / ${templateCount}::int) * t.count + t.rank AS occ,
              timestamptz '2024-01-01T00:00:00Z' + g * interval '30 seconds' AS at
          ) o
          ON CONFLICT (organization_id, slug) DO NOTHING`
        yield* sql`DELETE FROM slug_counters WHERE organization_id = ${org.id}`
      }
      yield* sql`VACUUM ANALYZE posts`
    })
  )

/**
 * Changelog entries `from` to `to − 1` of `org`: template g mod 40 with its
 * own release line, so every entry's HTML is distinct. With `unpublished`, 1
 * in 20 is a draft and 1 in 20 scheduled in the future.
 */
const fillUpdates = (url: string, org: Organization, from: number, to: number, unpublished: boolean) =>
  withSql(url, (sql) =>
    Effect.gen(function*() {
      const templates = updateTemplates.map((t, k) => ({ k, ...t, slug: slugify(t.headline) }))
      yield* sql`INSERT INTO updates (id, organization_id, title, slug, content, excerpt, image_url, published_at, created_at)
        SELECT ${org.id} || '_u' || g, ${org.id}, t.headline || ' (' || g || ')', t.slug || '-' || g,
          '<p class="release">Release ' || (g / 10) || '.' || (g % 10) || '</p>' || t.html, t.excerpt,
          CASE WHEN g % 3 = 0 THEN 'https://cdn.example.com/covers/' || g || '.png' END,
          CASE WHEN ${unpublished} AND g % 20 = 9 THEN NULL
               WHEN ${unpublished} AND g % 20 = 19 THEN now() + interval '7 days'
               ELSE now() - (g + 1) * interval '7 hours' END,
          now() - (g + 2) * interval '7 hours'
        FROM generate_series(${from}::int, ${to - 1}::int) AS g
        JOIN jsonb_to_recordset(${sqlJson(templates)}::jsonb) AS t(k int, headline text, slug text, html text, excerpt text)
          ON t.k = g % ${templates.length}::int`
      yield* sql`VACUUM ANALYZE updates`
    })
  )

/**
 * POST /feedback bodies: every public board of `orgs` in turn, titles from
 * `titleOf` (by default half from the common ones), dirty HTML, metadata.
 */
const feedbackBodies = (orgs: ReadonlyArray<Organization>, n = 500, titleOf = (_: number) => title(0.5)) =>
  Array.from({ length: n }, (_, i) => {
    const org = orgs[i % orgs.length]!
    const boards = publicBoardsOf(org)
    return JSON.stringify({
      organizationId: org.id,
      boardId: boards[Math.floor(i / orgs.length) % boards.length]!.id,
      title: titleOf(i),
      content: dirtyBody(),
      metadata: { page: `/app/${pick(["settings", "reports", "inbox", "billing"])}`, plan: pick(["free", "pro", "enterprise"]) }
    })
  })

// ---------------------------------------------------------------- processes, RSS, load

type Server = Awaited<ReturnType<typeof startProcess>> & { readonly name: string }

const startServers = async (url: string, withBaseline = true) => {
  const env = { DATABASE_URL: url, REDIS_URL: redisUrl, RATE_LIMIT_MULTIPLIER: rateLimitMultiplier, LOG_LEVEL: "warn" }
  const servers: Array<Server> = [{ name: "Hearken", ...(await startProcess("main.js", env)) }]
  if (withBaseline) servers.push({ name: "baseline", ...(await startProcess(join(import.meta.dirname, "baseline.ts"), env)) })
  return servers
}

/** Reads `pid`'s VmRSS every `everyMs` until `stop`, which yields the samples (seconds since start, MB). */
const sampleRss = (pid: number, everyMs: number) => {
  const started = performance.now()
  const samples: Array<{ readonly s: number; readonly mb: number }> = []
  const take = () => samples.push({ s: (performance.now() - started) / 1000, mb: memory(pid).rssMb })
  take()
  const timer = setInterval(take, everyMs)
  return {
    stop: () => {
      clearInterval(timer)
      take()
      return samples
    }
  }
}

interface Target {
  readonly name: string
  readonly kind: "read" | "write"
  readonly requests: () => Array<autocannon.Request>
}

const getTarget = (endpoint: "boards" | "updates", orgs: ReadonlyArray<Organization>): Target => ({
  name: `GET /${endpoint}`,
  kind: "read",
  requests: () => orgs.map((org) => ({ method: "GET" as const, path: `${api}/${endpoint}?organizationId=${org.id}` }))
})

const feedbackTarget = (bodies: ReadonlyArray<string>): Target => {
  let next = 0
  return {
    name: "POST /feedback",
    kind: "write",
    requests: () => [{
      method: "POST",
      path: `${api}/feedback`,
      headers: { "content-type": "application/json" },
      setupRequest: (request) => ({ ...request, body: bodies[next++ % bodies.length]! })
    }]
  }
}

/**
 * autocannon at `connections` for `seconds`; the latency of every 2xx answer
 * goes to `latencies` in ms (autocannon's own histogram keeps whole ms only).
 */
const hammer = (origin: string, requests: Array<autocannon.Request>, seconds: number, latencies?: Array<number>) =>
  new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      { url: origin, connections, duration: seconds, requests, timeout: 10 },
      (error: unknown, result) => (error ? reject(error) : resolve(result))
    )
    if (latencies) instance.on("response", (_client, status, _bytes, ms) => status < 300 && status >= 200 && latencies.push(ms))
  })

/** p50 and p99 of `latencies` (sorts it). */
const percentiles = (latencies: Array<number>) => {
  latencies.sort((a, b) => a - b)
  return latencies.length === 0 ? { p50Ms: NaN, p99Ms: NaN } : { p50Ms: percentile(latencies, 0.5), p99Ms: percentile(latencies, 0.99) }
}

interface Round {
  readonly requestsPerSecond: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly requests: number
  readonly non2xx: number
  readonly errors: number
  readonly bytesPerSecond: number
  readonly peakRssMb: number
}

const measure = async (server: Server, target: Target): Promise<Round> => {
  await hammer(server.origin, target.requests(), warmup)
  const sampler = sampleRss(server.pid, 250)
  const latencies: Array<number> = []
  const result = await hammer(server.origin, target.requests(), duration, latencies)
  const samples = sampler.stop()
  return {
    requestsPerSecond: result.requests.average,
    ...percentiles(latencies),
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    bytesPerSecond: result.throughput.average,
    peakRssMb: Math.max(...samples.map((x) => x.mb))
  }
}

const mean = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => a + b, 0) / xs.length
const summarize = (runs: ReadonlyArray<Round>) => ({
  requestsPerSecond: mean(runs.map((r) => r.requestsPerSecond)),
  p50Ms: mean(runs.map((r) => r.p50Ms)),
  p99Ms: mean(runs.map((r) => r.p99Ms)),
  non2xx: runs.reduce((a, r) => a + r.non2xx, 0),
  errors: runs.reduce((a, r) => a + r.errors, 0),
  peakRssMb: Math.max(...runs.map((r) => r.peakRssMb)),
  rounds: runs
})

// ---------------------------------------------------------------- checks

const getJson = async (origin: string, path: string) => {
  const res = await fetch(origin + path)
  if (res.status !== 200) throw new Error(`GET ${path} on ${origin} answered ${res.status}: ${await res.text()}`)
  return { etag: res.headers.get("etag"), body: await res.json() as unknown }
}

/** Both servers answer the same and store the same post: the baseline does the server's work, no less. */
const checkSameWork = async (url: string, [hearken, baseline]: ReadonlyArray<Server>, body: string) => {
  for (const org of organizations) {
    for (const endpoint of ["boards", "updates"]) {
      const path = `${api}/${endpoint}?organizationId=${org.id}`
      const [h, b] = [await getJson(hearken!.origin, path), await getJson(baseline!.origin, path)]
      deepStrictEqual(b.body, h.body, `GET ${path} differs`)
      deepStrictEqual(b.etag, h.etag, `GET ${path}: the ETags differ`)
    }
  }
  const created: Array<Record<string, string>> = []
  for (const server of [hearken!, baseline!]) {
    const res = await fetch(`${server.origin}${api}/feedback`, { method: "POST", headers: { "content-type": "application/json" }, body })
    if (res.status !== 200) throw new Error(`POST /feedback on ${server.name} answered ${res.status}: ${await res.text()}`)
    created.push(await res.json() as Record<string, string>)
  }
  deepStrictEqual(Object.keys(created[1]!).sort(), Object.keys(created[0]!).sort(), "POST /feedback answers differ in shape")
  const stored = await withSql(url, (sql) =>
    sql`SELECT id, title, content, excerpt, visibility, status_id, metadata, source, contact_id,
          lexicon::text, title_lexicon::text, text_hash
        FROM posts WHERE id IN (${created[0]!["id"]!}, ${created[1]!["id"]!})`
  )
  const [a, b] = created.map((c) => {
    const { id: _, ...row } = stored.find((r) => r["id"] === c["id"])!
    return row
  })
  deepStrictEqual(b, a, "the posts the two servers stored differ")
}

// ---------------------------------------------------------------- output helpers

const n0 = (x: number) => Math.round(x).toLocaleString("en")
const n1 = (x: number) => x.toFixed(1)
/** Latency: two decimals below 10 ms. */
const ms = (x: number) => x.toFixed(x < 10 ? 2 : 1)
const n2 = (x: number) => x.toFixed(2)
const mark = (met: boolean) => (met ? "met" : "missed")

const writeResults = (results: unknown) => {
  writeFileSync(resultsPath, `${JSON.stringify(results, null, 2)}\n`)
  console.log(`\nresults: ${resultsPath}`)
}

const environment = () => ({ date: new Date().toISOString(), node: process.version, cpus: cpus().length })

// ---------------------------------------------------------------- modes

const seed = async (url: string, postsPerOrg: ReadonlyArray<number>, updatesPerOrg: ReadonlyArray<number>) => {
  const started = performance.now()
  await seedOrganizations(url)
  const templates = postTemplates(Math.max(1, Math.min(maxTemplates, Math.max(...postsPerOrg))))
  for (const [i, org] of organizations.entries()) {
    const count = Math.min(templates.length, postsPerOrg[i]!)
    await storeTemplates(url, org, templates.slice(0, Math.max(1, count)))
    await fillPosts(url, org, Math.max(1, count), 0, postsPerOrg[i]!)
    await fillUpdates(url, org, 0, updatesPerOrg[i]!, true)
  }
  return { seconds: (performance.now() - started) / 1000, templates }
}

const loadMode = async (url: string) => {
  const half = (n: number) => [Math.ceil(n / 2), Math.floor(n / 2)]
  // What a browser downloads: the thin client alone and the whole widget, gzip.
  const bundles = await bundleSizes()
  printBundleSizes(bundles)
  console.log(`seeding ${n0(postCount)} posts, ${n0(updateCount)} updates…`)
  const seeded = await seed(url, half(postCount), half(updateCount))
  console.log(`seeded in ${n1(seeded.seconds)} s`)
  const servers = await startServers(url)
  try {
    const bodies = feedbackBodies(organizations)
    await checkSameWork(url, servers, bodies[0]!)
    const [hearkenIdle, baselineIdle] = servers.map((s) => memory(s.pid).rssMb)
    const endpoints: Array<Target> = [
      getTarget("boards", organizations),
      getTarget("updates", organizations),
      feedbackTarget(bodies)
    ]
    console.log(`${rounds} round(s) of ${duration} s after ${warmup} s warm-ups, ${connections} connections, Hearken then baseline`)
    const measured = []
    for (const target of endpoints) {
      const runs: Record<string, Array<Round>> = { Hearken: [], baseline: [] }
      for (let round = 0; round < rounds; round++) {
        for (const server of servers) {
          const run = await measure(server, target)
          runs[server.name]!.push(run)
          console.log(`  ${target.name} ${server.name} round ${round + 1}: ${n0(run.requestsPerSecond)} req/s, p50 ${ms(run.p50Ms)} ms, ` +
            `p99 ${ms(run.p99Ms)} ms, ${run.non2xx} non-2xx, ${run.errors} errors, RSS ${n0(run.peakRssMb)} MB`)
        }
      }
      const hearken = summarize(runs["Hearken"]!)
      const baseline = summarize(runs["baseline"]!)
      measured.push({
        endpoint: target.name,
        kind: target.kind,
        hearken,
        baseline,
        ratios: { requestsPerSecond: hearken.requestsPerSecond / baseline.requestsPerSecond, p99: hearken.p99Ms / baseline.p99Ms }
      })
    }
    const [hearkenMemory, baselineMemory] = servers.map((s) => memory(s.pid))
    const peak = Math.max(...measured.map((m) => m.hearken.peakRssMb))
    const checks = [
      ...measured.map((m) => {
        const target = m.kind === "read" ? targets.readRatio : targets.writeRatio
        return { name: `${m.endpoint} req/s ≥ ${target}× baseline`, value: m.ratios.requestsPerSecond, met: m.ratios.requestsPerSecond >= target }
      }),
      ...measured.map((m) => ({ name: `${m.endpoint} p99 ≤ ${targets.p99Ratio}× baseline`, value: m.ratios.p99, met: m.ratios.p99 <= targets.p99Ratio })),
      { name: `Hearken peak RSS under load ≤ ${targets.rssMb} MB`, value: peak, met: peak <= targets.rssMb }
    ]

    console.log(`\n${postCount.toLocaleString("en")} posts, ${updateCount} updates; ${rounds} round(s) × ${duration} s, ${connections} connections; H = Hearken, B = baseline\n`)
    console.log("| endpoint | Hearken req/s | baseline req/s | req/s ratio | p50 H / B (ms) | p99 H / B (ms) | p99 ratio | non-2xx + errors H / B | peak RSS H / B (MB) |")
    console.log("|---|---|---|---|---|---|---|---|---|")
    for (const m of measured) {
      const target = m.kind === "read" ? targets.readRatio : targets.writeRatio
      console.log(`| ${m.endpoint} | ${n0(m.hearken.requestsPerSecond)} | ${n0(m.baseline.requestsPerSecond)} | ` +
        `${n2(m.ratios.requestsPerSecond)} (≥ ${target}: ${mark(m.ratios.requestsPerSecond >= target)}) | ` +
        `${ms(m.hearken.p50Ms)} / ${ms(m.baseline.p50Ms)} | ${ms(m.hearken.p99Ms)} / ${ms(m.baseline.p99Ms)} | ` +
        `${n2(m.ratios.p99)} (≤ ${targets.p99Ratio}: ${mark(m.ratios.p99 <= targets.p99Ratio)}) | ` +
        `${m.hearken.non2xx + m.hearken.errors} / ${m.baseline.non2xx + m.baseline.errors} | ` +
        `${n0(m.hearken.peakRssMb)} / ${n0(m.baseline.peakRssMb)} |`)
    }
    console.log(`\nHearken peak RSS under load ${n0(peak)} MB (≤ ${targets.rssMb}: ${mark(peak <= targets.rssMb)}); ` +
      `RSS before load Hearken ${n0(hearkenIdle!)} MB, baseline ${n0(baselineIdle!)} MB; ` +
      `VmHWM Hearken ${n0(hearkenMemory!.hwmMb)} MB, baseline ${n0(baselineMemory!.hwmMb)} MB`)
    console.log(`targets met: ${checks.filter((c) => c.met).length} of ${checks.length}`)

    writeResults({
      mode: "load",
      ...environment(),
      config: { posts: postCount, updates: updateCount, rounds, durationSeconds: duration, warmupSeconds: warmup, connections, rateLimitMultiplier },
      seedSeconds: seeded.seconds,
      bundles,
      endpoints: measured,
      memory: {
        hearken: { rssBeforeLoadMb: hearkenIdle, peakRssUnderLoadMb: peak, hwmMb: hearkenMemory!.hwmMb },
        baseline: { rssBeforeLoadMb: baselineIdle, hwmMb: baselineMemory!.hwmMb }
      },
      targets: checks
    })
  } finally {
    for (const server of servers) await server.stop()
  }
}

/** Sequential requests: p50 in ms and the last answer's size in bytes. */
const sequential = async (count: number, budgetMs: number, request: () => Promise<Response>) => {
  const times: Array<number> = []
  let bytes = 0
  const until = performance.now() + budgetMs
  for (let i = 0; i < count && (i < 3 || performance.now() < until); i++) {
    const started = performance.now()
    const res = await request()
    const body = await res.arrayBuffer()
    times.push(performance.now() - started)
    if (res.status !== 200) throw new Error(`answered ${res.status}: ${Buffer.from(body).toString("utf8").slice(0, 300)}`)
    bytes = body.byteLength
  }
  times.sort((a, b) => a - b)
  return { p50Ms: percentile(times, 0.5), requests: times.length, bytes }
}

const growthMode = async (url: string) => {
  const postSizes = [10_000, 100_000, 1_000_000].filter((n) => n < growthMax)
  postSizes.push(growthMax)
  const updateSizes = [10, 1_000, 10_000]
  const [postsOrg, updatesOrg] = organizations
  console.log("seeding the organizations…")
  await seedOrganizations(url)
  const templates = postTemplates(Math.min(maxTemplates, growthMax))
  await storeTemplates(url, postsOrg, templates)
  const servers = await startServers(url)
  const both = async <A>(f: (server: Server) => Promise<A>) => ({ hearken: await f(servers[0]!), baseline: await f(servers[1]!) })
  try {
    const updates = []
    let filled = 0
    for (const size of updateSizes) {
      const fillStarted = performance.now()
      await fillUpdates(url, updatesOrg, filled, size, false)
      const fillSeconds = (performance.now() - fillStarted) / 1000
      filled = size
      const get = (server: Server) => () => fetch(`${server.origin}${api}/updates?organizationId=${updatesOrg.id}`)
      const results = await both(async (server) => ({
        // The first answer after the write misses the answer cache; the next ones may not.
        first: await sequential(1, 0, get(server)),
        then: await sequential(20, 5_000, get(server))
      }))
      updates.push({ publishedEntries: size, fillSeconds, ...results })
      console.log(`  /updates ${n0(size)} entries (filled in ${n1(fillSeconds)} s): Hearken first ${ms(results.hearken.first.p50Ms)} ms, ` +
        `then p50 ${ms(results.hearken.then.p50Ms)} ms; baseline first ${ms(results.baseline.first.p50Ms)} ms, ` +
        `then ${ms(results.baseline.then.p50Ms)} ms; ${n0(results.hearken.then.bytes)} bytes`)
    }
    const feedback = []
    // One post per common title starts its slug counter (a scan of the organization's numbered slugs),
    // then 30 posts with those titles measure the steady cost.
    const starters = feedbackBodies([postsOrg], commonTitles.length, (i) => commonTitles[i]!)
    const bodies = feedbackBodies([postsOrg], 500, () => zipfCommon())
    filled = 0
    for (const size of postSizes) {
      const fillStarted = performance.now()
      await fillPosts(url, postsOrg, templates.length, filled, size)
      const fillSeconds = (performance.now() - fillStarted) / 1000
      filled = size
      const [table] = await withSql(url, (sql) =>
        sql<{ bytes: string; posts: string }>`SELECT pg_total_relation_size('posts')::text AS bytes,
          (SELECT count(*) FROM posts WHERE organization_id = ${postsOrg.id})::text AS posts`
      )
      const post = (server: Server, list: ReadonlyArray<string>) => {
        let i = 0
        return () =>
          fetch(`${server.origin}${api}/feedback`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: list[i++ % list.length]!
          })
      }
      // Each server starts the counters itself: they are shared, through the database.
      const restartCounters = () => withSql(url, (sql) => sql`DELETE FROM slug_counters WHERE organization_id = ${postsOrg.id}`)
      const results = await both(async (server) => ({
        first: await restartCounters().then(() => sequential(starters.length, 600_000, post(server, starters))),
        then: await sequential(30, 30_000, post(server, bodies))
      }))
      feedback.push({ posts: Number(table!.posts), fillSeconds, tableBytes: Number(table!.bytes), ...results })
      console.log(`  /feedback ${n0(Number(table!.posts))} posts (filled in ${n1(fillSeconds)} s): Hearken first per title ` +
        `${ms(results.hearken.first.p50Ms)} ms, then p50 ${ms(results.hearken.then.p50Ms)} ms; baseline ` +
        `${ms(results.baseline.first.p50Ms)} ms, then ${ms(results.baseline.then.p50Ms)} ms`)
    }

    const grow = (x: number, first: number) => `×${(x / first).toFixed(1)}`
    console.log("\nGET /updates, sequential, by published entries in the organization (first: the answer right after the write)\n")
    console.log("| published entries | Hearken first | Hearken then (p50) | baseline first | baseline then (p50) | answer bytes |")
    console.log("|---|---|---|---|---|---|")
    for (const u of updates) {
      const [h, b, first] = [u.hearken, u.baseline, updates[0]!.hearken]
      console.log(`| ${n0(u.publishedEntries)} | ${ms(h.first.p50Ms)} ms | ${ms(h.then.p50Ms)} ms (${grow(h.then.p50Ms, first.then.p50Ms)}) | ` +
        `${ms(b.first.p50Ms)} ms | ${ms(b.then.p50Ms)} ms | ${n0(h.then.bytes)} (${grow(h.then.bytes, first.then.bytes)}) |`)
    }
    console.log("\nPOST /feedback, sequential, by posts in the organization (first: one post per common title after the import)\n")
    console.log("| posts | Hearken first per title (p50) | Hearken then (p50) | baseline first per title | baseline then | posts table + indexes |")
    console.log("|---|---|---|---|---|---|")
    for (const f of feedback) {
      const [h, b, first] = [f.hearken, f.baseline, feedback[0]!.hearken]
      console.log(`| ${n0(f.posts)} | ${ms(h.first.p50Ms)} ms (${grow(h.first.p50Ms, first.first.p50Ms)}) | ` +
        `${ms(h.then.p50Ms)} ms (${grow(h.then.p50Ms, first.then.p50Ms)}) | ${ms(b.first.p50Ms)} ms | ${ms(b.then.p50Ms)} ms | ` +
        `${n0(f.tableBytes / 1024 / 1024)} MB |`)
    }
    writeResults({ mode: "growth", ...environment(), config: { growthMax }, updates, feedback })
  } finally {
    for (const server of servers) await server.stop()
  }
}

const soakMode = async (url: string, seconds: number) => {
  const half = (n: number) => [Math.ceil(n / 2), Math.floor(n / 2)]
  console.log(`seeding ${n0(postCount)} posts, ${n0(updateCount)} updates…`)
  await seed(url, half(postCount), half(updateCount))
  const [hearken] = await startServers(url, false)
  try {
    const bodies = feedbackBodies(organizations)
    const reads = [...getTarget("boards", organizations).requests(), ...getTarget("updates", organizations).requests()]
    const [write] = feedbackTarget(bodies).requests()
    const requests = [reads[0]!, reads[2]!, write!, reads[1]!, reads[3]!, write!]
    console.log(`soak: ${seconds} s, ${connections} connections, GET /boards, GET /updates, POST /feedback in turn`)
    const sampler = sampleRss(hearken!.pid, 1_000)
    const latencies: Array<number> = []
    const result = await hammer(hearken!.origin, requests, seconds, latencies)
    const samples = sampler.stop()
    const { p50Ms, p99Ms } = percentiles(latencies)
    const warm = Math.min(60, seconds / 5)
    const after = samples.filter((x) => x.s >= warm)
    const at = after[0] ?? samples[samples.length - 1]!
    const end = samples[samples.length - 1]!
    const max = Math.max(...samples.map((x) => x.mb))
    // Least squares over the samples after warm-up: MB per minute.
    const ms = mean(after.map((x) => x.s))
    const mm = mean(after.map((x) => x.mb))
    const slope = after.length < 2 ? 0 :
      60 * after.reduce((a, x) => a + (x.s - ms) * (x.mb - mm), 0) / after.reduce((a, x) => a + (x.s - ms) ** 2, 0)
    const { hwmMb } = memory(hearken!.pid)
    console.log("\n| soak | req/s | p50 | p99 | non-2xx + errors | RSS after warm-up | RSS at end | max RSS | VmHWM | slope after warm-up |")
    console.log("|---|---|---|---|---|---|---|---|---|---|")
    console.log(`| ${seconds} s (warm-up ${n0(warm)} s) | ${n0(result.requests.average)} | ${n1(p50Ms)} ms | ${n1(p99Ms)} ms | ` +
      `${result.non2xx + result.errors} | ${n0(at.mb)} MB | ${n0(end.mb)} MB | ${n0(max)} MB | ${n0(hwmMb)} MB | ${n2(slope)} MB/min |`)
    const step = Math.max(1, Math.floor(samples.length / 10))
    console.log(`\nRSS (MB) every ${step} s: ${samples.filter((_, i) => i % step === 0).map((x) => n0(x.mb)).join(" ")}`)
    writeResults({
      mode: "soak",
      ...environment(),
      config: { seconds, warmupSeconds: warm, connections, posts: postCount, updates: updateCount },
      requestsPerSecond: result.requests.average,
      p50Ms,
      p99Ms,
      non2xx: result.non2xx,
      errors: result.errors,
      rss: { afterWarmupMb: at.mb, endMb: end.mb, maxMb: max, hwmMb, slopeMbPerMinute: slope },
      samples
    })
  } finally {
    await hearken!.stop()
  }
}

/** Metrics on against off, GET /boards, alternately (`--observability`). */
const observabilityMode = async (url: string) => {
  const half = (n: number) => [Math.ceil(n / 2), Math.floor(n / 2)]
  console.log(`seeding ${n0(postCount)} posts, ${n0(updateCount)} updates…`)
  await seed(url, half(postCount), half(updateCount))
  const env = { DATABASE_URL: url, REDIS_URL: redisUrl, RATE_LIMIT_MULTIPLIER: rateLimitMultiplier, LOG_LEVEL: "warn" }
  const metricsPort = await freePort()
  const servers: Array<Server> = [
    { name: "off", ...(await startProcess("main.js", env)) },
    { name: "metrics", ...(await startProcess("main.js", { ...env, METRICS_PORT: String(metricsPort) })) }
  ]
  try {
    const target = getTarget("boards", organizations)
    const runs: Record<string, Array<Round>> = { off: [], metrics: [] }
    let scrapes = 0
    console.log(`${rounds} round(s) of ${duration} s after ${warmup} s warm-ups, ${connections} connections, off then metrics`)
    for (let round = 0; round < rounds; round++) {
      for (const server of servers) {
        const scraper = server.name === "metrics"
          ? setInterval(() => void fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((r) => r.text()).then(() => scrapes++), 1_000)
          : undefined
        const run = await measure(server, target).finally(() => clearInterval(scraper))
        runs[server.name]!.push(run)
        console.log(`  ${target.name} ${server.name} round ${round + 1}: ${n0(run.requestsPerSecond)} req/s, p50 ${ms(run.p50Ms)} ms, ` +
          `p99 ${ms(run.p99Ms)} ms, ${run.non2xx} non-2xx, ${run.errors} errors`)
      }
    }
    const off = summarize(runs["off"]!)
    const on = summarize(runs["metrics"]!)
    const ratios = { requestsPerSecond: on.requestsPerSecond / off.requestsPerSecond, p50: on.p50Ms / off.p50Ms, p99: on.p99Ms / off.p99Ms }
    console.log("\n| GET /boards | req/s | p50 (ms) | p99 (ms) | non-2xx + errors |")
    console.log("|---|---|---|---|---|")
    for (const [name, r] of [["metrics off", off], ["METRICS_PORT set", on]] as const) {
      console.log(`| ${name} | ${n0(r.requestsPerSecond)} | ${ms(r.p50Ms)} | ${ms(r.p99Ms)} | ${r.non2xx + r.errors} |`)
    }
    console.log(`| on / off | ${n2(ratios.requestsPerSecond)} | ${n2(ratios.p50)} | ${n2(ratios.p99)} | |`)
    console.log(`${scrapes} scrapes during the metrics runs`)
    writeResults({
      mode: "observability",
      ...environment(),
      config: { posts: postCount, updates: updateCount, rounds, durationSeconds: duration, warmupSeconds: warmup, connections },
      endpoint: target.name,
      off,
      metrics: on,
      ratios,
      scrapes
    })
  } finally {
    for (const server of servers) await server.stop()
  }
}

// ---------------------------------------------------------------- main

const database = await freshDatabase("load")
try {
  if (mode === "growth") await growthMode(database.url)
  else if (mode === "soak") await soakMode(database.url, soakSeconds!)
  else if (mode === "observability") await observabilityMode(database.url)
  else await loadMode(database.url)
} finally {
  await database.drop()
}
