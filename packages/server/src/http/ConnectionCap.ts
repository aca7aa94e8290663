import type { Server } from "node:http"
import type { Socket } from "node:net"
import { bucketOf, parseAddress } from "../rate-limit/ClientIp.js"

/**
 * `MAX_CONNECTIONS_PER_ADDRESS` (docs/decisions/0029-request-bodies-and-sockets.md):
 * at most `max` open sockets per client address, IPv6 by its /64 as the rate
 * limiter counts it; a socket beyond is closed as it is accepted, before Node
 * reads a byte of it (no parser, no timers, no answer). The address is the
 * socket's own: `X-Forwarded-For` is a header, and nothing is parsed yet, so
 * behind a proxy every socket is the proxy's (the default is then off).
 *
 * Node's own `connection` listener (the HTTP parser's) is taken off and
 * called only for the sockets let in. `max` 0 installs nothing.
 */
export const install = <S extends Server>(server: S, max: number): S => {
  if (max === 0) return server
  const open = new Map<string, number>()
  const nodes = server.listeners("connection") as Array<(socket: Socket) => void>
  server.removeAllListeners("connection")
  server.on("connection", (socket: Socket) => {
    const address = socket.remoteAddress === undefined ? undefined : parseAddress(socket.remoteAddress)
    // A socket reset before it was accepted has no address any more: nothing to serve.
    if (address === undefined) return void socket.destroy()
    const bucket = bucketOf(address)
    const count = open.get(bucket) ?? 0
    if (count >= max) return void socket.destroy()
    open.set(bucket, count + 1)
    socket.once("close", () => {
      const left = open.get(bucket)! - 1
      if (left === 0) open.delete(bucket)
      else open.set(bucket, left)
    })
    for (const listener of nodes) listener.call(server, socket)
  })
  return server
}
