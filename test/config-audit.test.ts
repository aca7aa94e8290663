import { mkdtemp, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ConfigProvider, Effect, Option, Redacted } from "effect"
import { beforeAll, describe, expect, it } from "vitest"
import { configVariables, loadServerConfig } from "../packages/server/src/config/ServerConfig.js"
import { freePort, spawnServer } from "./support/process.js"

/**
 * Config that refuses what it cannot mean (issue 29): every variable the configuration reads
 * (`configVariables`, taken from the definition itself) has at least one bad value here, and each
 * is refused with the line start-up prints, naming the variable, saying what it must be, and
 * showing the value unless it is a secret. The table runs the server's own `loadServerConfig` (the
 * first thing a start does) for speed; the last block starts the real server with a few of them
 * and checks the process: exit code 1, the one line on stderr, no stack.
 * docs/configuration.md lists what each variable must be.
 */

const origin = "an http(s) origin: scheme, host and optional port, one origin (not a list), " +
  "without a path, query, fragment or user name (e.g. https://feedback.example.com)"
const listen = "an IP address or host name to listen on, such as 0.0.0.0, ::, 127.0.0.1 or localhost (no scheme, port or path)"
const hostPorts = "host:port pairs separated by commas, e.g. 10.0.0.1:26379,10.0.0.2:26379 ([::1]:26379 for IPv6)"
const ms = (maximum: number) => `a number of milliseconds between 1 and ${maximum}`
/** What every URL variable's host must be, after what the URL must be. */
const oneHost = "with one host: a DNS name, an IPv4 address or an IPv6 address in brackets (not a list, no spaces or commas)"

/** [variable, bad value, what it must be, the value as shown (undefined: not shown, a secret or unparsable URL)] */
const table: ReadonlyArray<readonly [string, string, string, string | undefined]> = [
  ["PORT", "10abc", "a port number between 0 and 65535", "10abc"],
  ["PORT", "-1", "a port number between 0 and 65535", "-1"],
  ["PORT", "3000.5", "a port number between 0 and 65535", "3000.5"],
  ["HOST", "http://0.0.0.0", listen, "http://0.0.0.0"],
  ["HOST", "0.0.0.0:3000", listen, "0.0.0.0:3000"],
  ["EMBEDDINGS_URL", "api.openai.com/v1", "an http(s) URL", undefined],
  ["EMBEDDINGS_URL", "https://api.example/v1?key=x",
    "an http(s) URL without a query or fragment (the API's base, e.g. https://api.openai.com/v1)", "https://api.example/v1?…"],
  ["EMBEDDINGS_URL", "https://a.com,https://b.com", `an http(s) URL ${oneHost}`, "https://a.com,https//b.com"],
  ["EMBEDDINGS_URL", "https://a.com;b.com/v1", `an http(s) URL ${oneHost}`, "https://a.com;b.com/v1"],
  ["EMBEDDINGS_MODEL", "text embedding 3", "a model name without spaces or control characters", "text embedding 3"],
  ["EMBEDDINGS_DIMENSIONS", "0", "an integer between 1 and 16000", "0"],
  ["EMBEDDINGS_DIMENSIONS", "1536d", "an integer between 1 and 16000", "1536d"],
  ["EMBEDDINGS_API_KEY", "Bearer sk-abc", "the key alone, without \"Bearer\", spaces or control characters", undefined],
  ["DATABASE_STATEMENT_TIMEOUT_MS", "5s", ms(3_600_000), "5s"],
  ["EMBEDDINGS_TIMEOUT_MS", "0", ms(600_000), "0"],
  ["HTTP_STALL_TIMEOUT_MS", "1m",
    "a number of milliseconds of at least 1000, more than DATABASE_STATEMENT_TIMEOUT_MS + EMBEDDINGS_TIMEOUT_MS (6500), and at most 600000", "1m"],
  ["SUGGESTIONS_STATEMENT_TIMEOUT_MS", "-5", "a number of milliseconds between 1 and DATABASE_STATEMENT_TIMEOUT_MS (5000)", "-5"],
  ["DATABASE_URL", "mysql://db/x", "a postgres:// or postgresql:// URL", undefined],
  ["DATABASE_URL", "db.example:5432/x", "a postgres:// or postgresql:// URL", undefined],
  ["DATABASE_URL", "postgres://u:pw@db1,db2/hearken", `a postgres:// or postgresql:// URL ${oneHost}`, undefined],
  ["DATABASE_URL", "postgres://u:pw@db%20one/hearken", `a postgres:// or postgresql:// URL ${oneHost}`, undefined],
  ["DATABASE_DIRECT_URL", "mysql://db/x", "a postgres:// or postgresql:// URL", undefined],
  ["DATABASE_DIRECT_URL", "db.example:5432/x", "a postgres:// or postgresql:// URL", undefined],
  ["DATABASE_READ_URL", "mysql://replica/x", "a postgres:// or postgresql:// URL", undefined],
  ["DATABASE_READ_URL", "postgres://u:pw@replica1,replica2/hearken", `a postgres:// or postgresql:// URL ${oneHost}`, undefined],
  ["DATABASE_POOL_MODE", "statement", "session or transaction", "statement"],
  ["REDIS_URL", "127.0.0.1:6379", "a redis:// or rediss:// URL", undefined],
  ["REDIS_URL", "redis://r1,r2:6379", `a redis:// or rediss:// URL ${oneHost}`, undefined],
  ["REDIS_URL", "redis://10.0.0.256:6379", `a redis:// or rediss:// URL ${oneHost}`, undefined],
  ["REDIS_SENTINELS", "127.0.0.1", hostPorts, "127.0.0.1"],
  ["REDIS_SENTINELS", "10.0.0.1:26379,redis://10.0.0.2:26379", hostPorts, "10.0.0.1:26379,redis://10.0.0.2:26379"],
  ["REDIS_SENTINELS", ",", hostPorts, ","],
  ["REDIS_SENTINEL_NAME", "my master",
    "the master group's name as the sentinels know it (sentinel monitor NAME …), without spaces or control characters", "my master"],
  ["REDIS_CLUSTER_NODES", "127.0.0.1:70000", hostPorts, "127.0.0.1:70000"],
  ["REDIS_CLUSTER_NODES", "[::1:7000", hostPorts, "[::1:7000"],
  ["REDIS_CLUSTER_NODES", "::1:7000", hostPorts, "::1:7000"],
  ["REDIS_PASSWORD", "pass\nword", "a password without control characters", undefined],
  ["REDIS_SENTINEL_PASSWORD", "pass\u0007word", "a password without control characters", undefined],
  ["SEED_FILE", tmpdir(), "a file, not a directory", tmpdir()],
  ["PUBLIC_URL", "feedback.example", "an http(s) URL", undefined],
  ["PUBLIC_URL", "https://feedback.example/api", origin, "https://feedback.example/api"],
  ["PUBLIC_URL", "https://a.com,https://b.com", origin, "https://a.com,https//b.com"],
  ["DASHBOARD_ORIGIN", "https://a.com/app", origin, "https://a.com/app"],
  ["DASHBOARD_ORIGIN", "https://a.com,https://b.com", origin, "https://a.com,https//b.com"],
  ["DASHBOARD_ORIGIN", "https://a.com https://b.com", origin, undefined],
  ["DASHBOARD_ORIGIN", "https://a.com?x=1", origin, "https://a.com/?…"],
  ["DASHBOARD_ORIGIN", "https://admin:pw@a.com", origin, "https://…@a.com/"],
  ["DASHBOARD_ORIGIN", "a.com", origin, undefined],
  ["ROOT_DOMAIN", "https://example.com", "a domain name such as example.com", "https://example.com"],
  ["ROOT_DOMAIN", "*.example.com", "a domain name such as example.com", "*.example.com"],
  ["WIDGET_FRAME_ANCESTORS", "a.com,b.com",
    "CSP frame-ancestors sources separated by spaces, e.g. * or https://shop.example https://*.shop.example, or 'none'", "a.com,b.com"],
  ["TRUST_PROXY", "yes", "an integer between 0 and 32", "yes"],
  ["TRUST_PROXY", "33", "an integer between 0 and 32", "33"],
  ["MAX_CONNECTIONS_PER_ADDRESS", "-1", "an integer between 0 and 1000000 (0: no cap)", "-1"],
  ["EMBEDDINGS_BACKFILL_TIMEOUT_MS", "2m", ms(3_600_000), "2m"],
  ["EMBEDDINGS_RETRY_BASE_MS", "0", ms(3_600_000), "0"],
  ["SUGGESTIONS_MAX_DISTANCE", "0.5x", "a number between 0 and 2", "0.5x"],
  ["SUGGESTIONS_MAX_DISTANCE", "-0.1", "a number between 0 and 2", "-0.1"],
  ["WEBHOOK_MAX_ATTEMPTS", "0", "an integer between 1 and 100", "0"],
  ["WEBHOOK_RETRY_BASE_MS", "1.5", ms(86_400_000), "1.5"],
  ["WEBHOOK_TIMEOUT_MS", "10abc", ms(600_000), "10abc"],
  ["WEBHOOK_WORKER", "maybe", "true or false", "maybe"],
  ["WEBHOOK_ALLOW_PRIVATE_URLS", "on", "true or false", "on"],
  ["RATE_LIMIT_MULTIPLIER", "0", "a number between 1 and 1000000", "0"],
  ["LOG_LEVEL", "verbose", "one of trace, debug, info, warn, error, fatal, none", "verbose"],
  ["LOG_FORMAT", "pretty", "text or json", "pretty"],
  ["OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318", "an http(s) URL", undefined],
  ["OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/?x=1",
    "an http(s) URL without a query or fragment (/v1/traces is appended to its path)", "http://collector:4318/?…"],
  ["OTEL_EXPORTER_OTLP_ENDPOINT", "http://user:pw@collector:4318",
    "a URL without a user name or password (give credentials as OTEL_EXPORTER_OTLP_HEADERS)", "http://…@collector:4318/"],
  ["OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector-a,collector-b:4318", `an http(s) URL ${oneHost}`, "http://collector-a,collector-b:4318/"],
  // Checked whether or not OTEL_EXPORTER_OTLP_ENDPOINT is set: none is set in these rows.
  ["OTEL_RESOURCE_ATTRIBUTES", "service.name", "key=value pairs separated by commas", "service.name"],
  ["OTEL_BSP_MAX_QUEUE_SIZE", "0", "an integer between 1 and 1000000", "0"],
  ["OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4096", "an integer between 1 and OTEL_BSP_MAX_QUEUE_SIZE (2048)", "4096"],
  ["OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "http/protobuf or http/json", "grpc"],
  ["OTEL_SERVICE_NAME", "hearken\u0007", "a name without control characters", "hearken\u0007"],
  ["OTEL_EXPORTER_OTLP_HEADERS", "authorization", "key=value pairs separated by commas", undefined],
  ["OTEL_BSP_SCHEDULE_DELAY", "5 s", ms(3_600_000), "5 s"],
  ["OTEL_EXPORTER_OTLP_TIMEOUT", "10000ms", ms(600_000), "10000ms"],
  ["METRICS_PORT", "9464x", "a port number between 0 and 65535", "9464x"],
  ["METRICS_HOST", "http://127.0.0.1", listen, "http://127.0.0.1"]
]

/** Refused only when the embedded database starts (it is a place on disk, not a value): the process block below. */
const checkedAtStart = ["PGLITE_DIR"]

const load = (env: Record<string, string>) =>
  Effect.runPromise(Effect.result(loadServerConfig.pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env }))))))

describe("every variable refuses a bad value, naming it", () => {
  it("the table has a bad value for every variable the configuration reads, and nothing else", async () => {
    const variables = await Effect.runPromise(configVariables)
    expect(variables.length).toBeGreaterThan(40)
    const covered = new Set([...table.map(([variable]) => variable), ...checkedAtStart])
    expect(variables.filter((variable) => !covered.has(variable))).toEqual([])
    expect([...covered].filter((variable) => !variables.includes(variable))).toEqual([])
  })

  it.each(table)("%s=%j", async (variable, value, must, shown) => {
    const result = await load({ [variable]: value })
    expect(result._tag).toBe("Failure")
    if (result._tag !== "Failure") return
    expect(result.failure._tag).toBe("InvalidConfig")
    expect(result.failure.message).toBe(
      `Invalid configuration: ${variable} must be ${must}${shown === undefined ? "" : `, got ${JSON.stringify(shown)}`}`
    )
  })

  // Redis topologies that cannot mean anything together (issue 30): the variable too many is named.
  const one = "(one of REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES)"
  const url = "(REDIS_URL carries its own: redis://:PASSWORD@host)"
  it.each([
    [{ REDIS_SENTINELS: "10.0.0.1:26379" }, "REDIS_SENTINEL_NAME must be set with REDIS_SENTINELS: the master group's name"],
    [{ REDIS_SENTINEL_NAME: "mymaster" }, "REDIS_SENTINEL_NAME must be set only with REDIS_SENTINELS"],
    [{ REDIS_URL: "redis://cache:6379", REDIS_SENTINELS: "10.0.0.1:26379", REDIS_SENTINEL_NAME: "mymaster" },
      `REDIS_SENTINELS must not be set with REDIS_URL ${one}`],
    [{ REDIS_URL: "redis://cache:6379", REDIS_CLUSTER_NODES: "10.0.0.1:7000" }, `REDIS_CLUSTER_NODES must not be set with REDIS_URL ${one}`],
    [{ REDIS_SENTINELS: "10.0.0.1:26379", REDIS_SENTINEL_NAME: "mymaster", REDIS_CLUSTER_NODES: "10.0.0.1:7000" },
      `REDIS_CLUSTER_NODES must not be set with REDIS_SENTINELS ${one}`],
    [{ REDIS_PASSWORD: "s3cret" }, `REDIS_PASSWORD must be set only with REDIS_SENTINELS or REDIS_CLUSTER_NODES ${url}`],
    [{ REDIS_URL: "redis://cache:6379", REDIS_PASSWORD: "s3cret" },
      `REDIS_PASSWORD must be set only with REDIS_SENTINELS or REDIS_CLUSTER_NODES ${url}`],
    [{ REDIS_CLUSTER_NODES: "10.0.0.1:7000", REDIS_SENTINEL_PASSWORD: "s3cret" }, "REDIS_SENTINEL_PASSWORD must be set only with REDIS_SENTINELS"]
  ] as const)("%j is refused", async (env, line) => {
    const result = await load(env)
    expect(result._tag).toBe("Failure")
    if (result._tag !== "Failure") return
    expect(result.failure._tag).toBe("InvalidConfig")
    expect(result.failure.message).toBe(`Invalid configuration: ${line}`)
  })

  it.each([
    [{ REDIS_SENTINELS: " 10.0.0.1:26379, sentinel-2.internal:26379,[::1]:26380 ", REDIS_SENTINEL_NAME: "mymaster" }, {
      _tag: "Sentinel",
      name: "mymaster",
      sentinels: [{ host: "10.0.0.1", port: 26379 }, { host: "sentinel-2.internal", port: 26379 }, { host: "::1", port: 26380 }],
      password: undefined,
      sentinelPassword: undefined
    }],
    [{ REDIS_SENTINELS: "10.0.0.1:26379", REDIS_SENTINEL_NAME: "mymaster", REDIS_PASSWORD: "pw 1", REDIS_SENTINEL_PASSWORD: "pw2" }, {
      _tag: "Sentinel",
      name: "mymaster",
      sentinels: [{ host: "10.0.0.1", port: 26379 }],
      password: "pw 1",
      sentinelPassword: "pw2"
    }],
    [{ REDIS_CLUSTER_NODES: "10.0.0.1:7000,10.0.0.2:7001", REDIS_PASSWORD: "s3cret" }, {
      _tag: "Cluster",
      nodes: [{ host: "10.0.0.1", port: 7000 }, { host: "10.0.0.2", port: 7001 }],
      password: "s3cret"
    }]
  ] as const)("%j is read as a topology", async (env, topology) => {
    const result = await load(env)
    expect(result._tag).toBe("Success")
    if (result._tag !== "Success") return
    // Passwords as their value, for the comparison (they are `Redacted` in the configuration).
    const reveal = (secret: unknown) =>
      Option.isOption(secret) ? Option.getOrUndefined(Option.map(secret, (value) => Redacted.value(value as Redacted.Redacted<string>))) : secret
    const read = Option.getOrUndefined(result.success.redis)
    expect(read === undefined ? undefined : Object.fromEntries(Object.entries(read).map(([key, value]) => [key, reveal(value)])))
      .toEqual(Object.fromEntries(Object.entries(topology).filter(([, value]) => value !== undefined)))
  })

  // What the refusals above must not catch.
  it.each([
    ["HOST", "::"], ["HOST", "[::1]"], ["HOST", "my_service"], ["HOST", "localhost"],
    ["DASHBOARD_ORIGIN", "https://app.example:8443/"], ["PUBLIC_URL", "http://localhost:3000"],
    ["EMBEDDINGS_MODEL", "nomic-embed-text:latest"], ["WEBHOOK_WORKER", "yes"], ["WEBHOOK_ALLOW_PRIVATE_URLS", "0"],
    ["OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/prefix"], ["OTEL_EXPORTER_OTLP_ENDPOINT", "http://otel_collector:4318"],
    ["OTEL_EXPORTER_OTLP_ENDPOINT", "http://[::1]:4318"], ["EMBEDDINGS_URL", "http://127.0.0.1:11434/v1"],
    ["EMBEDDINGS_URL", "https://api.openai.com/v1"], ["DASHBOARD_ORIGIN", "http://[::1]:8080"],
    ["DATABASE_URL", "postgres://hearken:pw@db.internal:5432/hearken"], ["DATABASE_URL", "postgresql://[::1]/hearken"],
    ["DATABASE_URL", "postgres://%2Frun%2Fpostgresql/hearken"], ["REDIS_URL", "redis://:pw@127.0.0.1:6379/2"],
    ["REDIS_URL", "rediss://cache.example.com.:6380"], ["REDIS_URL", "redis://[::1]:6379"]
  ])("%s=%s is accepted", async (variable, value) => {
    const result = await load({ [variable]: value })
    expect(result._tag).toBe("Success")
  })
})

describe("the server process: exit 1 and the one line on stderr, no stack", { timeout: 90_000 }, () => {
  let file: string
  beforeAll(async () => {
    file = join(await mkdtemp(join(tmpdir(), "hearken-audit-")), "not-a-directory")
    await writeFile(file, "")
  })

  it.each([
    ["DASHBOARD_ORIGIN", "https://a.com/app", `DASHBOARD_ORIGIN must be ${origin}, got "https://a.com/app"`],
    ["PUBLIC_URL", "https://feedback.example/api", `PUBLIC_URL must be ${origin}, got "https://feedback.example/api"`],
    ["HOST", "0.0.0.0:3000", `HOST must be ${listen}, got "0.0.0.0:3000"`],
    ["EMBEDDINGS_URL", "https://a.com,https://b.com", `EMBEDDINGS_URL must be an http(s) URL ${oneHost}, got "https://a.com,https//b.com"`],
    ["OTEL_BSP_MAX_QUEUE_SIZE", "10abc", `OTEL_BSP_MAX_QUEUE_SIZE must be an integer between 1 and 1000000, got "10abc"`],
    // Refused for what is missing beside it, before any connection is tried.
    ["REDIS_SENTINELS", "127.0.0.1:26380", "REDIS_SENTINEL_NAME must be set with REDIS_SENTINELS: the master group's name"]
  ])("%s=%s", async (variable, value, line) => {
    const server = spawnServer({ PGLITE_DIR: "memory", LOG_LEVEL: "info", [variable]: value }, await freePort())
    const code = await server.closed
    expect(code).toBe(1)
    expect(server.stderr()).toBe(`hearken: Invalid configuration: ${line}\n`)
    expect(server.stdout() + server.stderr()).not.toMatch(/^\s+at /m)
  })

  it("PGLITE_DIR that is a file", async () => {
    const server = spawnServer({ PGLITE_DIR: file, LOG_LEVEL: "info" }, await freePort())
    expect(await server.closed).toBe(1)
    expect(server.stderr()).toMatch(/^hearken: [^\n]*check PGLITE_DIR\n$/)
    expect(server.stdout() + server.stderr()).not.toMatch(/^\s+at /m)
  })
})
