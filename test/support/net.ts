import { createServer, type Server } from "node:net"

/** A loopback port free right now (the tests and the benchmarks start servers on it). */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = createServer()
    probe.once("error", reject)
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address()
      probe.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))))
    })
  })

/** Listens on a free loopback port and yields it (test collectors, receivers, proxies and host pages). */
export const listenOnLoopback = (server: Server) =>
  new Promise<number>((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))
    })
  })
