import type { PausePolicy } from "./WebhookRepo.js"

/** Attempts one worker keeps in flight; also the sockets it may open to one host. */
export const concurrency = 32
/** Attempts one worker keeps in flight to one endpoint: a dead endpoint's backlog leaves the other half free. */
export const perEndpoint = 16
/** How often a worker looks for due deliveries when nothing woke it. */
export const pollMs = 500
/** 50 consecutive failed attempts, the first at least an hour old, pause an endpoint (decision 0007). */
export const pausePolicy: PausePolicy = { failures: 50, stretchMs: 60 * 60_000 }
/** A lease outlives any attempt (bounded by the timeout) and the write of its outcome. */
export const leaseMs = (timeoutMs: number) => 2 * timeoutMs + 10_000
