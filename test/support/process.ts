import { type ChildProcess, spawn } from "node:child_process"
import { join } from "node:path"
import { eventually } from "./wait.js"

const dist = join(import.meta.dirname, "..", "..", "packages", "server", "dist")
export const mainScript = join(dist, "main.js")
export const workerScript = join(dist, "worker.js")
export const webhooksCliScript = join(dist, "webhooks-cli.js")
export const seedScript = join(dist, "seed.js")

import { freePort } from "./net.js"

export { freePort }

export interface ServerProcess {
  readonly child: ChildProcess
  readonly origin: string
  output: () => string
  /** What it wrote to stdout alone, and to stderr alone. */
  readonly stdout: () => string
  readonly stderr: () => string
  /** Resolves with the exit code. */
  readonly exited: Promise<number | null>
  /** Resolves with the exit code once stdout and stderr are read to their end as well. */
  readonly closed: Promise<number | null>
}

/** `node packages/server/dist/main.js` with exactly `env` (plus PATH), as a process manager would run it. */
export const spawnServer = (env: Record<string, string>, port: number): ServerProcess =>
  spawnScript(mainScript, [], { HOST: "127.0.0.1", PORT: String(port), ...env }, port)

/** `node SCRIPT ARGS…` with exactly `env` (plus PATH). */
export const spawnScript = (script: string, args: ReadonlyArray<string>, env: Record<string, string>, port = 0): ServerProcess => {
  const child = spawn(process.execPath, [script, ...args], {
    env: { PATH: process.env["PATH"] ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let out = ""
  let stdout = ""
  let stderr = ""
  child.stdout!.on("data", (d) => (out += d, stdout += d))
  child.stderr!.on("data", (d) => (out += d, stderr += d))
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  const closed = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)))
  return { child, origin: `http://127.0.0.1:${port}`, output: () => out, stdout: () => stdout, stderr: () => stderr, exited, closed }
}

export const waitForHealth = (origin: string, timeoutMs = 30_000) =>
  eventually(
    `${origin} to become healthy`,
    // A refused connection means not listening yet.
    () => fetch(`${origin}/health`).then((res) => res.status === 200 || undefined, () => undefined),
    { timeoutMs, everyMs: 200 }
  )

/**
 * The processes one test file starts, against the environment `env()` gives
 * at the time: `start` spawns the server and waits for `/health`, `track`
 * adopts another process, `stop` sends SIGTERM and yields the exit code, and
 * `killAll` (for `afterAll`) ends whatever is left.
 */
export const processGroup = (env: () => Record<string, string>) => {
  const running = new Set<ServerProcess>()
  const track = (process: ServerProcess) => {
    running.add(process)
    return process
  }
  return {
    track,
    start: async (extra: Record<string, string> = {}) => {
      const server = track(spawnServer({ ...env(), ...extra }, await freePort()))
      await waitForHealth(server.origin)
      return server
    },
    stop: async (process: ServerProcess) => {
      process.child.kill("SIGTERM")
      const code = await process.exited
      running.delete(process)
      return code
    },
    killAll: () => {
      for (const process of running) process.child.kill("SIGKILL")
    }
  }
}
