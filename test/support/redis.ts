import { Redis } from "ioredis"
import { type ChildProcess, spawn } from "node:child_process"
import { connect } from "node:net"
import { freePort } from "./process.js"

/** The shared Redis the rate-limit tests use: database 15, flushed by the tests. */
export const testRedisUrl = process.env["TEST_REDIS_URL"] ?? "redis://127.0.0.1:6379/15"

const canConnect = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, "127.0.0.1")
    socket.once("connect", () => (socket.destroy(), resolve(true)))
    socket.once("error", () => resolve(false))
  })

/** A Redis server of the test's own, on its own port, that the test may kill, restart or freeze. */
export class OwnRedis {
  private process: ChildProcess | undefined
  private constructor(readonly port: number) {}

  static async start() {
    const redis = new OwnRedis(await freePort())
    await redis.restart()
    return redis
  }

  get url() {
    return `redis://127.0.0.1:${this.port}`
  }

  async restart() {
    this.process = spawn("redis-server", ["--port", String(this.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], {
      stdio: "ignore"
    })
    for (let i = 0; i < 100 && !(await canConnect(this.port)); i++) await new Promise((r) => setTimeout(r, 50))
  }

  async kill() {
    const child = this.process
    if (child === undefined || child.exitCode !== null) return
    const exited = new Promise((r) => child.once("exit", r))
    child.kill("SIGCONT")
    child.kill("SIGKILL")
    await exited
  }

  freeze() {
    this.process?.kill("SIGSTOP")
  }

  thaw() {
    this.process?.kill("SIGCONT")
  }
}

// The Sentinel group and the Cluster that scripts/prepare-services.sh starts on loopback (issue 30).

/** Where prepare-services.sh keeps the nodes' configuration files (`REDIS_TOPOLOGY_DIR`). */
export const topologyDir = process.env["REDIS_TOPOLOGY_DIR"] ?? "/tmp/hearken-redis"
export const sentinelName = "hearken"
export const sentinelPorts = [26380, 26381, 26382] as const
export const sentinelDataPorts = [6390, 6391] as const
export const clusterPorts = [7000, 7001, 7002] as const

export const sentinelEnv = {
  REDIS_SENTINELS: sentinelPorts.map((port) => `127.0.0.1:${port}`).join(","),
  REDIS_SENTINEL_NAME: sentinelName
}
export const clusterEnv = { REDIS_CLUSTER_NODES: clusterPorts.map((port) => `127.0.0.1:${port}`).join(",") }

/** One command to the server on `port`, on a connection of its own; undefined when nothing answers. */
export const redisCall = (port: number, ...args: Array<string | number>): Promise<unknown> => redisCallWith(undefined, port, ...args)

/** `redisCall` to a server that requires `password`. */
export const redisCallWith = async (password: string | undefined, port: number, ...args: Array<string | number>): Promise<unknown> => {
  const client = new Redis({
    port,
    host: "127.0.0.1",
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 500,
    ...(password === undefined ? {} : { password })
  })
  client.on("error", () => {})
  try {
    await client.connect()
    return await client.call(String(args[0]), ...args.slice(1).map(String))
  } catch {
    return undefined
  } finally {
    client.disconnect()
  }
}

/** The port of the Sentinel group's master as the sentinels name it (the first that answers). */
export const sentinelMasterPort = async (): Promise<number | undefined> => {
  for (const port of sentinelPorts) {
    const answer = await redisCall(port, "SENTINEL", "get-master-addr-by-name", sentinelName)
    if (Array.isArray(answer)) return Number(answer[1])
  }
  return undefined
}

/** `ROLE`'s first word: `master`, `slave`, or undefined when nothing answers. */
export const roleOf = async (port: number) => {
  const answer = await redisCall(port, "ROLE")
  return Array.isArray(answer) ? String(answer[0]) : undefined
}

/** Stops the server on `port` at once, as a crash would (`SHUTDOWN NOSAVE`: nothing written), and waits until the port is closed. */
export const shutdownRedis = async (port: number) => {
  await redisCall(port, "SHUTDOWN", "NOSAVE")
  for (let i = 0; i < 100 && (await canConnect(port)); i++) await new Promise((r) => setTimeout(r, 20))
  if (await canConnect(port)) throw new Error(`Redis on ${port} did not stop`)
}

/** Starts the node on `port` again from its configuration file (it daemonizes), with `args` added, and waits for its PING. */
export const startRedisNode = async (port: number, args: ReadonlyArray<string> = []) => {
  const child = spawn("redis-server", [`${topologyDir}/${port}/redis.conf`, ...args], { stdio: "ignore" })
  await new Promise((resolve) => child.once("exit", resolve))
  for (let i = 0; i < 100 && (await redisCall(port, "PING")) !== "PONG"; i++) await new Promise((r) => setTimeout(r, 50))
  if ((await redisCall(port, "PING")) !== "PONG") throw new Error(`Redis on ${port} did not start`)
}

/** The Cluster node (port) that serves `key`'s hash slot. */
export const clusterNodeOf = async (key: string): Promise<number> => {
  const slot = Number(await redisCall(clusterPorts[0], "CLUSTER", "KEYSLOT", key))
  const slots = (await redisCall(clusterPorts[0], "CLUSTER", "SLOTS")) as Array<[number, number, [string, number]]>
  const range = slots.find(([from, to]) => from <= slot && slot <= to)
  if (range === undefined) throw new Error(`no node serves slot ${slot}`)
  return Number(range[2][1])
}
