import { afterAll, describe, expect, it } from "vitest"
import { blockedRange } from "../packages/server/src/webhooks/AddressGuard.js"
import { endpoint, Receiver, webhookOrganization } from "./support/receiver.js"
import { postJson, startSeededServer, useServer } from "./support/server.js"
import { eventually } from "./support/wait.js"

describe("the SSRF guard's address list", () => {
  it.each([
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["0.0.0.0", "unspecified"],
    ["10.1.2.3", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["100.64.0.1", "CGNAT shared address space"],
    ["100.100.100.200", "CGNAT shared address space"],
    ["169.254.169.254", "link-local, cloud metadata"],
    ["168.63.129.16", "cloud metadata"],
    ["192.0.0.192", "IETF protocol assignments"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["255.255.255.255", "reserved"],
    ["198.18.0.1", "benchmarking"],
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["fe80::1", "link-local"],
    ["fe80::1%eth0", "link-local"],
    ["fc00::1", "unique local, private"],
    ["fd00:ec2::254", "unique local, private"],
    ["ff02::1", "multicast"],
    ["::ffff:127.0.0.1", "loopback, embedded in IPv6"],
    ["::ffff:7f00:1", "loopback, embedded in IPv6"],
    ["::ffff:169.254.169.254", "link-local, cloud metadata, embedded in IPv6"],
    ["::ffff:10.0.0.1", "private, embedded in IPv6"],
    ["::127.0.0.1", "loopback, embedded in IPv6"],
    ["64:ff9b::a9fe:a9fe", "link-local, cloud metadata, embedded in IPv6"],
    ["2002:7f00:1::", "loopback, embedded in IPv6"],
    ["2001:db8::1", "documentation"],
    ["2001::1", "IETF protocol assignments"],
    // Every IPv6 form that embeds an IPv4 address: judged by that address, or blocked as a range.
    ["::ffff:0:7f00:1", "loopback, embedded in IPv6"], // IPv4-translated (RFC 2765), ::ffff:0:0:0/96
    ["::ffff:0:169.254.169.254", "link-local, cloud metadata, embedded in IPv6"],
    ["::ffff:0:a00:1", "private, embedded in IPv6"],
    ["::10.0.0.1", "private, embedded in IPv6"], // IPv4-compatible, ::/96
    ["::0.0.0.2", "unspecified, embedded in IPv6"],
    ["64:ff9b::127.0.0.1", "loopback, embedded in IPv6"], // NAT64, 64:ff9b::/96
    ["64:ff9b:1::7f00:1", "local NAT64"], // local NAT64, 64:ff9b:1::/48 (where the address sits depends on the prefix)
    ["64:ff9b:1:ffff::808:808", "local NAT64"],
    ["2002:a9fe:a9fe::1", "link-local, cloud metadata, embedded in IPv6"], // 6to4, 2002::/16
    ["2002:c0a8:101:1::1", "private, embedded in IPv6"],
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "IETF protocol assignments"], // Teredo, 2001::/32 (client address obfuscated)
    ["2001:0:7f00:1::80ff:fffe", "IETF protocol assignments"]
  ])("refuses %s (%s)", (address, range) => {
    expect(blockedRange(address)).toBe(range)
  })

  it.each(["93.184.215.14", "8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "2a00:1450:4001::200e", "::ffff:8.8.8.8", "64:ff9b::808:808",
    "::ffff:0:808:808", "::8.8.8.8", "2002:808:808::1"])(
    "allows the public address %s",
    (address) => {
      expect(blockedRange(address)).toBeUndefined()
    }
  )
})

/** Loopback spelled every way, and the other ranges, each as the URL an organization could register. */
const receiver = await Receiver.start()
afterAll(() => receiver.close())
const port = receiver.port
const refusedUrls: ReadonlyArray<readonly [string, string]> = [
  [`http://127.0.0.1:${port}/a`, "127.0.0.1 is in a blocked range (loopback)"],
  [`http://127.1:${port}/b`, "127.0.0.1 is in a blocked range (loopback)"],
  [`http://0x7f.1:${port}/c`, "127.0.0.1 is in a blocked range (loopback)"],
  [`http://2130706433:${port}/d`, "127.0.0.1 is in a blocked range (loopback)"],
  [`http://0177.0.0.1:${port}/e`, "127.0.0.1 is in a blocked range (loopback)"],
  [`http://localhost:${port}/f`, "localhost resolves to"],
  [`http://[::1]:${port}/g`, "::1 is in a blocked range (loopback)"],
  [`http://[::ffff:127.0.0.1]:${port}/h`, "::ffff:7f00:1 is in a blocked range (loopback, embedded in IPv6)"],
  [`http://[::ffff:0:7f00:1]:${port}/i`, "::ffff:0:7f00:1 is in a blocked range (loopback, embedded in IPv6)"],
  [`http://[64:ff9b::127.0.0.1]:${port}/j`, "64:ff9b::7f00:1 is in a blocked range (loopback, embedded in IPv6)"],
  ["http://169.254.169.254/latest/meta-data/", "169.254.169.254 is in a blocked range (link-local, cloud metadata)"],
  ["http://10.0.0.1/hook", "10.0.0.1 is in a blocked range (private)"],
  ["http://100.64.0.1/hook", "100.64.0.1 is in a blocked range (CGNAT shared address space)"],
  ["http://[fe80::1]/hook", "fe80::1 is in a blocked range (link-local)"],
  ["http://224.0.0.1/hook", "224.0.0.1 is in a blocked range (multicast)"],
  ["http://0.0.0.0/hook", "0.0.0.0 is in a blocked range (unspecified)"]
]

const fixture = {
  organizations: [
    webhookOrganization("org_ssrf", refusedUrls.map(([url], i) => endpoint(`wh_ssrf_${i}`, url)))
  ]
}

describe("webhook URLs with the guard on (the default)", () => {
  const server = useServer(() => startSeededServer(fixture, { WEBHOOK_MAX_ATTEMPTS: "3", WEBHOOK_RETRY_BASE_MS: "50" }))

  it("refuses every loopback, private, link-local, CGNAT, multicast and metadata target: a failed delivery with its reason", async () => {
    const res = await postJson(`${server.api}/feedback`, { organizationId: "org_ssrf", boardId: "b_org_ssrf", title: "Reach in", content: "" })
    expect(res.status).toBe(200)
    const rows = await eventually("every delivery to settle", async () => {
      const rows = await server.db.query((sql) =>
        sql`SELECT endpoint_id AS "endpointId", status, attempts, last_error AS "lastError"
            FROM webhook_deliveries ORDER BY endpoint_id`
      )
      return rows.length === refusedUrls.length && rows.every((r) => r["status"] !== "pending") ? rows : undefined
    }, { timeoutMs: 15_000, everyMs: 100 })
    expect(rows).toHaveLength(refusedUrls.length)
    for (const [i, [url, reason]] of refusedUrls.entries()) {
      const row = rows.find((r) => r["endpointId"] === `wh_ssrf_${i}`)!
      expect({ url, status: row["status"], attempts: row["attempts"] }).toEqual({ url, status: "failed", attempts: 1 })
      expect(row["lastError"]).toContain(`refused: ${reason}`)
    }
    expect(receiver.received).toEqual([])
  })
})
