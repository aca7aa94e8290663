import { createHmac } from "node:crypto"

/** The key of a `whsec_…` secret: the base64-decoded part after the prefix (Standard Webhooks). */
export const secretKey = (secret: string): Buffer => Buffer.from(secret.replace(/^whsec_/, ""), "base64")

/** `v1,` + base64 HMAC-SHA256 over `{id}.{timestamp}.{body}`. */
export const sign = (key: Buffer, id: string, timestampSeconds: number, body: string): string =>
  `v1,${createHmac("sha256", key).update(`${id}.${timestampSeconds}.${body}`).digest("base64")}`

export const userAgent = "Hearken-Webhooks/1.0"

/**
 * Every header of one attempt of message `id`, signed at `timestampSeconds`: one signature per
 * key, separated by spaces (Standard Webhooks), so that during a rotation a receiver that knows
 * any one of the endpoint's secrets verifies it.
 */
export const deliveryHeaders = (keys: ReadonlyArray<Buffer>, id: string, timestampSeconds: number, body: string) => ({
  "content-type": "application/json",
  "user-agent": userAgent,
  "webhook-id": id,
  "webhook-timestamp": String(timestampSeconds),
  "webhook-signature": keys.map((key) => sign(key, id, timestampSeconds, body)).join(" ")
})
