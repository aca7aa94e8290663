import { readFileSync, writeFileSync } from "node:fs"
import type { ServerProcess } from "./process.js"

/** VmRSS and VmHWM of `pid`, in MB (throws once the process is gone). */
export const memory = (pid: number) => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0)
  return { rssMb: kb("VmRSS") / 1024, hwmMb: kb("VmHWM") / 1024 }
}

export interface Watched {
  /** The highest RSS seen, in MB (VmHWM since the watch began). */
  readonly peakRssMb: number
  /** The slowest `/health`, in ms (Infinity if one failed). */
  readonly slowestHealthMs: number
  /** Whether its RSS passed `killAtMb`, and it was killed for it. */
  readonly killed: boolean
}

const alive = (server: ServerProcess) => server.child.exitCode === null && server.child.signalCode === null

/**
 * Watches a server process under attack: its RSS every 50 ms and `/health`
 * one request after another (each after 100 ms), until `stop`. Past
 * `killAtMb` it is killed at once, so that a server that does not hold costs
 * the machine no more than that.
 */
export const watchServer = (server: ServerProcess, killAtMb: number) => {
  let maxRss = 0
  let slowestHealth = 0
  let stopped = false
  let killed = false
  const pid = server.child.pid!
  // Restarts VmHWM (the peak RSS) from now.
  writeFileSync(`/proc/${pid}/clear_refs`, "5")
  const rss = setInterval(() => {
    if (!alive(server)) return
    const { rssMb } = memory(pid)
    maxRss = Math.max(maxRss, rssMb)
    if (rssMb > killAtMb && !killed) {
      killed = true
      server.child.kill("SIGKILL")
    }
  }, 50)
  const health = (async () => {
    while (!stopped && alive(server)) {
      const started = performance.now()
      const status = await fetch(`${server.origin}/health`, { signal: AbortSignal.timeout(10_000) }).then((r) => r.status, () => 0)
      slowestHealth = Math.max(slowestHealth, status === 200 ? performance.now() - started : Infinity)
      await new Promise((r) => setTimeout(r, 100))
    }
  })()
  let result: Promise<Watched> | undefined
  return {
    stop: (): Promise<Watched> =>
      result ??= (async () => {
        stopped = true
        clearInterval(rss)
        await health
        const hwm = alive(server) ? memory(pid).hwmMb : maxRss
        return { peakRssMb: Math.round(Math.max(hwm, maxRss)), slowestHealthMs: Math.round(slowestHealth), killed }
      })()
  }
}
