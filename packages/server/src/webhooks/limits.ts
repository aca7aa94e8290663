import type { PausePolicy } from "./DeliveryQueue.js"

/** Attempts one worker keeps in flight that hold a slot (decision 0026: late ones hold none). */
export const concurrency = 32
/** Attempts one worker keeps in flight to one endpoint… */
export const perEndpoint = 16
/**
 * …and to one stalled endpoint (its last attempt timed out, or failed after
 * a second or more without an answer): it is tried one delivery at a time.
 */
export const perStalledEndpoint = 1
/** Attempts one worker keeps in flight to one organization's endpoints, late ones included. */
export const perOrganization = 16
/**
 * Attempts one worker keeps in flight to stalled endpoints, all of them
 * together, late ones included: what dead endpoints can cost is half the
 * slots, however many there are.
 */
export const stalledSlots = 16
/** An attempt without an answer after this long is late: it gives its slot back… */
export const lateAfterMs = 1_000
/** …while fewer than this many late attempts are in flight. */
export const lateSlots = 128
/** Every attempt a worker may have in flight: the sockets it may open to one host. */
export const maxInFlight = concurrency + lateSlots
/** How often a worker looks for due deliveries when nothing woke it. */
export const pollMs = 500
/** 50 consecutive failed attempts, the first at least an hour old, pause an endpoint (decision 0007). */
export const pausePolicy: PausePolicy = { failures: 50, stretchMs: 60 * 60_000 }
/** A lease outlives any attempt (bounded by the timeout) and the write of its outcome. */
export const leaseMs = (timeoutMs: number) => 2 * timeoutMs + 10_000
