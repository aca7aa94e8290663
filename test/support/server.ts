import { afterAll, beforeAll } from "vitest"
import { ConfigProvider, Context, Effect, Exit, Layer, Scope } from "effect"
import { HttpServer } from "effect/http"
import { App } from "../../packages/server/src/App.js"
import * as ServerConfig from "../../packages/server/src/config/ServerConfig.js"
import { createDatabase, databaseEnv, type TestDatabase } from "./database.js"
import { processGroup } from "./process.js"
import { OwnRedis } from "./redis.js"

export interface TestServer {
  /** `http://127.0.0.1:PORT` */
  readonly origin: string
  /** `origin` + `/api/widget/v1` */
  readonly api: string
  readonly db: TestDatabase
  readonly close: () => Promise<void>
}

/**
 * The real server, in this process, listening on an ephemeral loopback port,
 * over a fresh PostgreSQL database. `env` is the environment it sees (no
 * `process.env`); `DATABASE_URL` (`databaseEnv`), `PORT`, `HOST`, `LOG_LEVEL` and a generous
 * `RATE_LIMIT_MULTIPLIER` are filled in.
 */
export const startServer = async (env: Record<string, string> = {}): Promise<TestServer> => startServerOn(await createDatabase(), env, true)

/**
 * `startServer` over the database `db`, which `close` drops when `owned`:
 * a server started again on the database another one left.
 */
export const startServerOn = async (db: TestDatabase, env: Record<string, string> = {}, owned = false): Promise<TestServer> => {
  const drop = () => owned ? db.drop() : Promise.resolve()
  const provider = ConfigProvider.fromEnv({
    // Tests other than the rate-limit ones send far more than 5 suggestions a minute from one address.
    env: { ...databaseEnv(db.url), PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "error", RATE_LIMIT_MULTIPLIER: "1000", ...env }
  })
  const scope = Effect.runSync(Scope.make())
  const layer = App.pipe(Layer.provide(ServerConfig.layer), Layer.provide(ConfigProvider.layer(provider)))
  try {
    const context = await Effect.runPromise(Layer.buildWithScope(layer, scope))
    const address = Context.get(context, HttpServer.HttpServer).address
    if (address._tag === "UnixPathAddress") throw new Error("expected a TCP address")
    const origin = `http://127.0.0.1:${address.port}`
    return {
      origin,
      api: `${origin}/api/widget/v1`,
      db,
      close: async () => {
        await Effect.runPromise(Scope.close(scope, Exit.void))
        await drop()
      }
    }
  } catch (error) {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await drop()
    throw error
  }
}

export { getJson, type JsonResponse, postJson } from "./client.js"

/** Writes `fixture` to a new temporary file, for `SEED_FILE`, and gives its path. */
export const writeFixtureFile = async (fixture: unknown) => {
  const { mkdtemp, writeFile } = await import("node:fs/promises")
  const { tmpdir } = await import("node:os")
  const { join } = await import("node:path")
  const dir = await mkdtemp(join(tmpdir(), "hearken-fixture-"))
  const file = join(dir, "fixture.json")
  await writeFile(file, JSON.stringify(fixture))
  return file
}

/**
 * For a file whose tests run the server as a process (`processGroup`): a
 * fresh database, a Redis of its own and `fixture` as the seed, made before
 * the tests and removed after them, with the environment `env` adds to.
 */
export const useServerProcesses = (fixture: unknown, env: Record<string, string> = {}) => {
  let db: TestDatabase | undefined
  let redis: OwnRedis | undefined
  let fullEnv: Record<string, string> = {}
  const processes = processGroup(() => fullEnv)
  beforeAll(async () => {
    ;[db, redis] = await Promise.all([createDatabase(), OwnRedis.start()])
    fullEnv = {
      ...databaseEnv(db.url),
      REDIS_URL: redis.url,
      SEED_FILE: await writeFixtureFile(fixture),
      LOG_LEVEL: "warn",
      RATE_LIMIT_MULTIPLIER: "1000",
      ...env
    }
  })
  afterAll(async () => {
    processes.killAll()
    await redis?.kill()
    await db?.drop()
  })
  return {
    processes,
    get db() {
      if (db === undefined) throw new Error("the database is not created yet")
      return db
    }
  }
}

/** Writes `fixture` to a temporary file and starts a server that imports it (`SEED_FILE`). */
export const startSeededServer = async (fixture: unknown, env: Record<string, string> = {}) =>
  startServer({ SEED_FILE: await writeFixtureFile(fixture), ...env })

/**
 * Starts a server before this file's tests and closes it after them. The
 * returned object reads through to the running server.
 */
export const useServer = (start: () => Promise<TestServer>): TestServer => {
  let current: TestServer | undefined
  beforeAll(async () => {
    current = await start()
  })
  afterAll(() => current?.close())
  const get = () => {
    if (current === undefined) throw new Error("the server is not started yet")
    return current
  }
  return {
    get origin() { return get().origin },
    get api() { return get().api },
    get db() { return get().db },
    close: () => get().close()
  }
}
