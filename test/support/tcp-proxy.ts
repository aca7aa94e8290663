import * as net from "node:net"

/**
 * How the proxy treats traffic:
 * - `forward`: both ways, as a direct connection;
 * - `blackhole`: sockets stay open and new ones are accepted, but nothing goes through either way (a host
 *   lost, a partition, a pooler waiting for a server it cannot reach);
 * - `reset`: an established connection is reset (RST) when it next sends, a new one at once (a host
 *   that rebooted: its kernel has forgotten the connections).
 */
export type ProxyMode = "forward" | "blackhole" | "reset"

export interface TcpProxy {
  readonly port: number
  /** Switches the mode. Back to `forward`, the connections that lost traffic in a blackhole are closed (their byte streams have holes). */
  readonly set: (mode: ProxyMode) => void
  readonly close: () => Promise<void>
}

interface Pair {
  readonly client: net.Socket
  upstream: net.Socket | undefined
  /** Lost traffic in a blackhole (or was accepted in one): closed when the proxy heals. */
  holed: boolean
}

/** A TCP proxy on 127.0.0.1 (a free port) to `target`, whose mode a test switches. */
export const startProxy = async (target: { readonly host: string; readonly port: number }): Promise<TcpProxy> => {
  let mode: ProxyMode = "forward"
  const pairs = new Set<Pair>()
  const drop = (pair: Pair, reset: boolean) => {
    pairs.delete(pair)
    if (reset) pair.client.resetAndDestroy()
    else pair.client.destroy()
    pair.upstream?.destroy()
  }
  const server = net.createServer((client) => {
    const pair: Pair = { client, upstream: undefined, holed: false }
    pairs.add(pair)
    client.on("error", () => undefined)
    client.on("close", () => drop(pair, false))
    if (mode === "reset") return drop(pair, true)
    if (mode === "blackhole") pair.holed = true
    const upstream = net.connect(target)
    pair.upstream = upstream
    upstream.on("error", () => undefined)
    upstream.on("close", () => drop(pair, false))
    client.on("data", (chunk) => {
      if (mode === "reset") return drop(pair, true)
      if (mode === "blackhole" || pair.holed) {
        pair.holed = true
        return
      }
      upstream.write(chunk)
    })
    upstream.on("data", (chunk) => {
      if (mode !== "forward" || pair.holed) {
        pair.holed = true
        return
      }
      client.write(chunk)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    port: (server.address() as net.AddressInfo).port,
    set: (next) => {
      mode = next
      if (next === "forward") for (const pair of [...pairs]) if (pair.holed) drop(pair, false)
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const pair of [...pairs]) drop(pair, false)
        server.close(() => resolve())
      })
  }
}
