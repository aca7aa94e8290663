/**
 * `npm run bench` (`node bench/load/main.ts`; `-- --help` lists the flags):
 * Hearken's three hot endpoints under load, against the raw baseline
 * (`../baseline.ts`: plain `node:http`, `pg` and `ioredis` doing the same
 * database, Redis and sanitizer work), both as processes on the local
 * PostgreSQL and Redis. This module reads the flags and runs one mode; the
 * modes are `load.ts`, `growth.ts`, `soak.ts` and `observability.ts`, what
 * they share `common.ts` (settings, servers, load, output) and `data.ts`
 * (the generated data and its seeding).
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
 * Counts may group digits with `_` or `,` (`--posts 1_000_000`).
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
 * `--soak [SECONDS]` (default 600; `--soak 90` or `--soak=90`): Hearken alone
 * under mixed load (GET /boards, GET /updates, POST /feedback in turn, both
 * organizations) at BENCH_CONNECTIONS for SECONDS, VmRSS sampled every
 * second: RSS when the warm-up (a fifth of the run, at most 60 s) ends, at
 * the end, the maximum, and the slope after warm-up (least squares, MB per
 * minute).
 *
 * `--observability`: what the Prometheus metrics cost. Two Hearken processes
 * on the same data, one without METRICS_PORT (no exporter: the default) and
 * one with it, scraped once a second during its runs, are loaded alternately
 * on GET /boards (the cheapest request, where a fixed cost per request shows
 * most), BENCH_ROUNDS times each, as in load mode. Reports req/s, p50 and p99
 * of each and their ratio.
 *
 * Given several modes, `--growth` wins, then `--soak`, then `--observability`.
 *
 * Load mode (and `--smoke`) first prints and records the gzip sizes of the
 * thin client, the widget's first download and each of its languages
 * (`../sizes.ts`; `npm run build` makes them).
 *
 * Results go to BENCH_RESULTS (default bench/results.json; results-growth.json
 * and results-soak.json for the other modes) and a Markdown table to stdout.
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Effect, Option, Schema, SchemaTransformation } from "effect"
import { Argument, CliError, Command, Flag } from "effect/cli"
import { join } from "node:path"
import { freshDatabase } from "../support.ts"
import type { Mode, Settings } from "./common.ts"
import { growthMode } from "./growth.ts"
import { loadMode } from "./load.ts"
import { observabilityMode } from "./observability.ts"
import { soakMode } from "./soak.ts"

/** A count: a number, not negative, its digits grouped with `_` or `,` if wanted (1_000_000, 1,000,000). */
const Count = Schema.String.pipe(
  Schema.decodeTo(
    Schema.FiniteFromString.check(Schema.isGreaterThanOrEqualTo(0)),
    SchemaTransformation.transform({ decode: (s: string) => s.replaceAll("_", "").replaceAll(",", ""), encode: (s) => s })
  )
)
const count = (name: string, metavar = "N") => Flag.String(name).pipe(Flag.withSchema(Count), Flag.withMetavar(metavar))
const toggle = (name: string, description: string) =>
  Flag.Boolean(name).pipe(Flag.withDescription(description), Flag.withDefault(false))

const defaultSoakSeconds = 600

const flags = {
  smoke: toggle("smoke", "Tiny: 100 posts, 10 updates, 1 round of 2 s after 1 s warm-ups, 10 connections (what the tests run)"),
  growth: toggle("growth", "How time and bytes grow: GET /updates at 10, 1,000 and 10,000 entries, POST /feedback at 10k, 100k and 1M posts"),
  soak: count("soak", "SECONDS").pipe(
    Flag.withOptionalValue(String(defaultSoakSeconds)),
    Flag.withDescription(`Hearken alone under mixed load for SECONDS (default ${defaultSoakSeconds}), RSS every second`),
    Flag.optional
  ),
  soakSeconds: Argument.String("seconds").pipe(
    Argument.withSchema(Count),
    Argument.withMetavar("SECONDS"),
    Argument.withDescription("--soak's SECONDS, given apart: --soak 90 is --soak=90"),
    Argument.optional
  ),
  observability: toggle("observability", "Metrics on against off: two Hearken processes on GET /boards, alternately"),
  posts: count("posts").pipe(Flag.withDescription("Posts, over both organizations (default 10,000; 100 with --smoke)"), Flag.optional),
  updates: count("updates").pipe(Flag.withDescription("Changelog entries, over both organizations (default 200; 10 with --smoke)"), Flag.optional),
  growthMax: count("growth-max").pipe(Flag.withDescription("--growth: the largest organization, in posts (default 1,000,000)"), Flag.withDefault(1_000_000))
}

type Input = Command.Command.Config.Infer<typeof flags>

/** A BENCH_* variable's number, `fallback` when it is unset or empty. */
const envNumber = (name: string, fallback: number) => {
  const value = process.env[name]
  return value === undefined || value === "" ? fallback : Number(value)
}

const settingsOf = (input: Input): Settings => {
  const { smoke } = input
  const soak = Option.orElse(input.soakSeconds, () => input.soak)
  const mode: Mode = input.growth ? "growth" : Option.isSome(soak) ? "soak" : input.observability ? "observability" : "load"
  return {
    mode,
    postCount: Option.getOrElse(input.posts, () => (smoke ? 100 : 10_000)),
    updateCount: Option.getOrElse(input.updates, () => (smoke ? 10 : 200)),
    growthMax: input.growthMax,
    soakSeconds: Option.getOrElse(soak, () => defaultSoakSeconds),
    rounds: envNumber("BENCH_ROUNDS", smoke ? 1 : 2),
    connections: envNumber("BENCH_CONNECTIONS", smoke ? 10 : 50),
    duration: envNumber("BENCH_DURATION", smoke ? 2 : 10),
    warmup: envNumber("BENCH_WARMUP", smoke ? 1 : 3),
    redisUrl: process.env["BENCH_REDIS_URL"] ?? "redis://127.0.0.1:6379/14",
    resultsPath: process.env["BENCH_RESULTS"] ??
      join(import.meta.dirname, "..", mode === "load" ? "results.json" : `results-${mode}.json`)
  }
}

const modes: Record<Mode, (settings: Settings, url: string) => Promise<void>> = {
  load: loadMode,
  growth: growthMode,
  soak: soakMode,
  observability: observabilityMode
}

/** One mode on a fresh database, dropped after it (unless BENCH_KEEP=1). */
const run = (settings: Settings) =>
  Effect.acquireUseRelease(
    Effect.promise(() => freshDatabase("load")),
    (database) => Effect.promise(() => modes[settings.mode](settings, database.url)),
    (database) => Effect.promise(() => database.drop())
  )

const bench = Command.make("bench", flags, (input) => run(settingsOf(input))).pipe(
  Command.withDescription(
    "Hearken against a raw node:http baseline doing the same work: GET /boards, GET /updates and POST /feedback " +
      "under load (the default mode), or --growth, --soak or --observability (in that order, when several are given). " +
      "BENCH_ROUNDS, BENCH_DURATION, BENCH_WARMUP, BENCH_CONNECTIONS, BENCH_DATABASE_URL, BENCH_REDIS_URL, BENCH_KEEP=1 " +
      "and BENCH_RESULTS (default bench/results.json, results-growth.json, results-soak.json) set the rest."
  ),
  Command.validate((input) =>
    Option.isSome(input.soakSeconds) && Option.isNone(input.soak)
      ? Effect.fail(new CliError.ValidationError({ message: `${input.soakSeconds.value}: only --soak takes a number without a flag name` }))
      : Effect.void
  ),
  Command.withExamples([
    { command: "npm run bench", description: "Load: 10,000 posts, 2 rounds of 10 s at 50 connections" },
    { command: "npm run bench -- --smoke", description: "The same, tiny, in seconds" },
    { command: "npm run bench -- --growth --growth-max 100_000", description: "Growth, up to 100k posts" },
    { command: "npm run bench -- --soak 90", description: "A 90-second soak" }
  ])
)

Command.run(bench, { version: "1.0.0" }).pipe(
  // Usage errors were already printed with the help text.
  Effect.catchIf(CliError.isCliError, () => Effect.sync(() => (process.exitCode = 2))),
  Effect.provide(NodeServices.layer),
  NodeRuntime.runMain
)
