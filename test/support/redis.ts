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
