import { describe, expect, it } from "vitest"
import { bucketOf, clientAddress, parseAddress } from "../packages/server/src/rate-limit/ClientIp.js"

describe("client addresses", () => {
  it.each([
    ["127.0.0.1", "127.0.0.1"],
    ["203.0.113.7:4711", "203.0.113.7"],
    ["[2001:db8::1]:443", "2001:db8::1"],
    ["[2001:db8::1]", "2001:db8::1"],
    ["fe80::1%eth0", "fe80::1"],
    ["2001:DB8::A", "2001:db8::a"],
    [" 10.0.0.1 ", "10.0.0.1"],
    ["unknown", undefined],
    ["", undefined],
    ["1.2.3", undefined],
    ["999.1.1.1", undefined],
    ["2001:db8::1:80", "2001:db8::1:80"]
  ])("parses %j as %j", (raw, expected) => {
    expect(parseAddress(raw)).toBe(expected)
  })

  it.each([
    ["192.0.2.1", "192.0.2.1"],
    ["::ffff:192.0.2.1", "192.0.2.1"],
    ["::ffff:c000:201", "192.0.2.1"],
    ["0:0:0:0:0:ffff:192.0.2.1", "192.0.2.1"],
    ["2001:db8:1:2::1", "2001:db8:1:2::/64"],
    ["2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"],
    ["2001:0db8:0001:0002:0000:0000:0000:0001", "2001:db8:1:2::/64"],
    ["::1", "0:0:0:0::/64"],
    ["64:ff9b::192.0.2.1", "64:ff9b:0:0::/64"]
  ])("buckets %s as %s", (address, bucket) => {
    expect(bucketOf(address)).toBe(bucket)
  })

  it("uses the socket peer unless proxies are trusted", () => {
    expect(clientAddress("::ffff:127.0.0.2", "203.0.113.9", 0)).toBe("::ffff:127.0.0.2")
    expect(clientAddress("127.0.0.2", undefined, 2)).toBe("127.0.0.2")
    expect(clientAddress(undefined, undefined, 0)).toBeUndefined()
  })

  it("takes the N-th address from the right of X-Forwarded-For", () => {
    const chain = "198.51.100.1, 203.0.113.1, 10.0.0.1, 10.0.0.2"
    expect(clientAddress("10.0.0.3", chain, 1)).toBe("10.0.0.2")
    expect(clientAddress("10.0.0.3", chain, 2)).toBe("10.0.0.1")
    expect(clientAddress("10.0.0.3", chain, 3)).toBe("203.0.113.1")
    expect(clientAddress("10.0.0.3", chain, 9)).toBe("198.51.100.1")
    expect(clientAddress("10.0.0.3", "1.1.1.1,,  ,2.2.2.2", 1)).toBe("2.2.2.2")
  })

  it("falls back to the socket peer when the chosen entry is not an address", () => {
    expect(clientAddress("10.0.0.3", "203.0.113.1, garbage", 1)).toBe("10.0.0.3")
    expect(clientAddress("10.0.0.3", " , ", 1)).toBe("10.0.0.3")
  })
})
