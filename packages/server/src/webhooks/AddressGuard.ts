import { isIPv4, isIPv6 } from "node:net"

/**
 * Which addresses a webhook may never reach (decision 0007): every IANA
 * special-purpose range that is not the public internet, for IPv4 and IPv6,
 * plus cloud metadata services. IPv6 forms that embed an IPv4 address at a
 * fixed place (IPv4-mapped, IPv4-translated, IPv4-compatible, NAT64
 * 64:ff9b::/96, 6to4) are judged by that address; those that hide it
 * (Teredo in 2001::/32, local NAT64 in 64:ff9b:1::/48) are blocked whole.
 */
type Range = readonly [network: bigint, prefix: number, name: string]

const v4 = (address: string): bigint =>
  address.split(".").reduce((n, octet) => (n << 8n) | BigInt(Number(octet)), 0n)

const v6 = (address: string): bigint => {
  let text = address.toLowerCase()
  const zone = text.indexOf("%")
  if (zone >= 0) text = text.slice(0, zone)
  // A trailing dotted quad (`::ffff:127.0.0.1`) is two groups.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (dotted !== null) {
    const n = v4(dotted[1]!)
    text = text.slice(0, -dotted[1]!.length) + `${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`
  }
  const [head = "", tail] = text.split("::")
  const left = head === "" ? [] : head.split(":")
  const right = tail === undefined || tail === "" ? [] : tail.split(":")
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill("0"), ...right]
  return groups.reduce((n, group) => (n << 16n) | BigInt(parseInt(group, 16)), 0n)
}

const ipv4Ranges: ReadonlyArray<Range> = ([
  ["0.0.0.0", 8, "unspecified"],
  ["10.0.0.0", 8, "private"],
  ["100.64.0.0", 10, "CGNAT shared address space"],
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link-local, cloud metadata"],
  ["172.16.0.0", 12, "private"],
  ["192.0.0.0", 24, "IETF protocol assignments"],
  ["192.0.2.0", 24, "documentation"],
  ["192.88.99.0", 24, "6to4 relay anycast"],
  ["192.168.0.0", 16, "private"],
  ["198.18.0.0", 15, "benchmarking"],
  ["198.51.100.0", 24, "documentation"],
  ["203.0.113.0", 24, "documentation"],
  ["224.0.0.0", 4, "multicast"],
  ["240.0.0.0", 4, "reserved"],
  // Azure's wire server answers metadata-like requests on a public address.
  ["168.63.129.16", 32, "cloud metadata"]
] as const).map(([network, prefix, name]) => [v4(network), prefix, name])

const ipv6Ranges: ReadonlyArray<Range> = ([
  ["::", 128, "unspecified"],
  ["::1", 128, "loopback"],
  ["64:ff9b:1::", 48, "local NAT64"],
  ["100::", 64, "discard-only"],
  ["2001::", 23, "IETF protocol assignments"],
  ["2001:db8::", 32, "documentation"],
  ["3fff::", 20, "documentation"],
  ["5f00::", 16, "segment routing"],
  ["fc00::", 7, "unique local, private"],
  ["fe80::", 10, "link-local"],
  ["fec0::", 10, "site-local"],
  ["ff00::", 8, "multicast"]
] as const).map(([network, prefix, name]) => [v6(network), prefix, name])

const within = (address: bigint, bits: number, [network, prefix]: Range) =>
  (address >> BigInt(bits - prefix)) === (network >> BigInt(bits - prefix))

const classifyV4 = (n: bigint) => ipv4Ranges.find((range) => within(n, 32, range))?.[2]

/** The IPv4 address an IPv6 address embeds, for the forms that route to it. */
const embeddedV4 = (n: bigint): bigint | undefined => {
  if (n >> 32n === 0xffffn) return n & 0xffffffffn // ::ffff:a.b.c.d, IPv4-mapped
  if (n >> 32n === 0xffff0000n) return n & 0xffffffffn // ::ffff:0:a.b.c.d, IPv4-translated (RFC 2765)
  if (n >> 32n === 0n && n > 1n) return n & 0xffffffffn // ::a.b.c.d, IPv4-compatible (deprecated)
  if (n >> 32n === 0x0064ff9b0000000000000000n) return n & 0xffffffffn // 64:ff9b::/96, NAT64
  if (n >> 112n === 0x2002n) return (n >> 80n) & 0xffffffffn // 2002::/16, 6to4
  return undefined
}

/**
 * Why `address` (an IP literal as `dns.lookup` returns it) may not be a
 * webhook target, or `undefined` when it is a public address.
 */
export const blockedRange = (address: string): string | undefined => {
  if (isIPv4(address)) return classifyV4(v4(address))
  if (!isIPv6(address)) return "not an IP address"
  const n = v6(address)
  const embedded = embeddedV4(n)
  if (embedded !== undefined) {
    const name = classifyV4(embedded)
    return name === undefined ? undefined : `${name}, embedded in IPv6`
  }
  return ipv6Ranges.find((range) => within(n, 128, range))?.[2]
}

/** The host of a URL as a resolver wants it: IPv6 literals lose their brackets. */
export const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, "$1")
