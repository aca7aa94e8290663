import { isIPv4, isIPv6 } from "node:net"

/** `1.2.3.4`, `1.2.3.4:80`, `[2001:db8::1]:80`, `2001:db8::1%eth0` → the bare address, or undefined. */
export const parseAddress = (raw: string): string | undefined => {
  let value = raw.trim()
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(value)
  if (bracketed) value = bracketed[1]!
  else if (/^\d{1,3}(\.\d{1,3}){3}:\d+$/.test(value)) value = value.slice(0, value.lastIndexOf(":"))
  value = value.replace(/%.*$/, "")
  return isIPv4(value) || isIPv6(value) ? value.toLowerCase() : undefined
}

/** The eight 16-bit groups of an IPv6 address (which `isIPv6` accepted). */
const hextets = (address: string): Array<number> => {
  const expand = (part: string): Array<number> => {
    if (part === "") return []
    return part.split(":").flatMap((group) => {
      if (group.includes(".")) {
        const [a, b, c, d] = group.split(".").map(Number) as [number, number, number, number]
        return [(a << 8) | b, (c << 8) | d]
      }
      return [parseInt(group, 16)]
    })
  }
  const [head = "", tail] = address.split("::")
  const left = expand(head)
  if (tail === undefined) return left
  const right = expand(tail)
  return [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right]
}

/**
 * The rate-limit bucket of a client address: IPv4 as is (IPv4-mapped IPv6
 * becomes plain IPv4, so two mapped clients never share a bucket), any other
 * IPv6 address its /64, since one subscriber usually holds a whole /64.
 */
export const bucketOf = (address: string): string => {
  if (!isIPv6(address)) return address
  const groups = hextets(address)
  const mapped = groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff
  if (mapped) return `${groups[6]! >> 8}.${groups[6]! & 0xff}.${groups[7]! >> 8}.${groups[7]! & 0xff}`
  return `${groups.slice(0, 4).map((g) => g.toString(16)).join(":")}::/64`
}

/**
 * The client address: the socket peer, or with `trustProxy = N` the N-th
 * address from the right of `X-Forwarded-For` (all such headers joined), the
 * one our outermost trusted proxy saw. Addresses further left are written by
 * the client and never trusted. With fewer entries than trusted hops the
 * leftmost one is used; an unparseable entry falls back to the socket peer.
 */
export const clientAddress = (peer: string | undefined, forwardedFor: string | undefined, trustProxy: number) => {
  const socket = peer === undefined ? undefined : parseAddress(peer)
  if (trustProxy === 0 || forwardedFor === undefined) return socket
  const hops = forwardedFor.split(",").map((s) => s.trim()).filter((s) => s !== "")
  if (hops.length === 0) return socket
  const chosen = hops[Math.max(0, hops.length - trustProxy)]!
  return parseAddress(chosen) ?? socket
}
