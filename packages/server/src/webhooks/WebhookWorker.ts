import { PgClient } from "@effect/sql-pg"
import { Cause, Clock, Context, Effect, FiberSet, Layer, Option, Queue, Random, Schedule } from "effect"
import { randomUUID } from "node:crypto"
import { ServerConfig } from "../config.js"
import { type AttemptResult, judge, type RetryPolicy } from "./RetryPolicy.js"
import { deliveryHeaders, secretKey } from "./signature.js"
import { WebhookTransport } from "./Transport.js"
import { type ClaimedDelivery, type Completion, type PausePolicy, WebhookRepo } from "./WebhookRepo.js"

/** Deliveries one worker sends at once. */
export const concurrency = 32
/** How often a worker looks for due deliveries when nothing woke it. */
export const pollMs = 500
/** 50 consecutive failed attempts, the first at least an hour old, pause an endpoint (decision 0007). */
export const pausePolicy: PausePolicy = { failures: 50, stretchMs: 60 * 60_000 }
/** A lease outlives any attempt (bounded by the timeout) and the write of its outcome. */
export const leaseMs = (timeoutMs: number) => 2 * timeoutMs + 10_000

/**
 * Writes of an outcome survive a dropped connection: they are idempotent (id
 * and lease token). 6.35 s of retries in all, well inside what is left of a lease.
 */
const persist = Effect.retry({ schedule: Schedule.exponential("50 millis"), times: 7 })

const httpStatus = (result: AttemptResult) => result._tag === "Answered" ? result.status : null
const responseExcerpt = (result: AttemptResult) => result._tag === "Answered" ? result.excerpt : null

/** Sending: one attempt of one delivery, and claiming what is due. */
export class WebhookDelivery extends Context.Service<WebhookDelivery, {
  /** Leases up to `limit` deliveries that are due by the `Clock`. */
  readonly claim: (limit: number) => Effect.Effect<ReadonlyArray<ClaimedDelivery>>
  /** Signs and sends one attempt, then records its outcome and its endpoint's streak. */
  readonly attempt: (delivery: ClaimedDelivery) => Effect.Effect<void>
  /** Claims what is due and attempts all of it; yields how many. */
  readonly deliverDue: Effect.Effect<number>
}>()("hearken/WebhookDelivery") {
  static readonly layer = Layer.effect(
    WebhookDelivery,
    Effect.gen(function*() {
      const config = yield* ServerConfig
      const repo = yield* WebhookRepo
      const transport = yield* WebhookTransport
      const policy: RetryPolicy = { maxAttempts: config.webhookMaxAttempts, baseMs: config.webhookRetryBaseMs }
      const lease = leaseMs(config.webhookTimeoutMs)

      const claim = Effect.fn("WebhookDelivery.claim")(function*(limit: number) {
        const now = yield* Clock.currentTimeMillis
        return yield* repo.claim(now, limit, lease, randomUUID())
      }, Effect.orDie)

      const attempt = Effect.fn("WebhookDelivery.attempt")(function*(delivery: ClaimedDelivery) {
        const sentAt = yield* Clock.currentTimeMillis
        const headers = deliveryHeaders(secretKey(delivery.secret), delivery.messageId, Math.floor(sentAt / 1000), delivery.body)
        const result = yield* transport.send(delivery.url, headers, delivery.body)
        const now = yield* Clock.currentTimeMillis
        const number = delivery.attempts + 1
        const verdict = judge(policy, number, result, yield* Random.next, now)
        const base = { nowMs: now, httpStatus: httpStatus(result), response: responseExcerpt(result) }
        const completion: Completion = verdict._tag === "Succeeded"
          ? { ...base, status: "succeeded", error: null }
          : verdict._tag === "Retry"
          ? { ...base, status: "pending", error: verdict.reason, nextAttemptMs: now + verdict.delayMs }
          : { ...base, status: "failed", error: verdict.reason }
        const annotations = { deliveryId: delivery.id, messageId: delivery.messageId, endpointId: delivery.endpointId, attempt: number }
        const recorded = yield* persist(repo.complete(delivery, completion))
        if (!recorded) {
          return yield* Effect.logWarning("Webhook attempt outlived its lease; another worker owns the delivery now").pipe(
            Effect.annotateLogs(annotations)
          )
        }
        if (verdict._tag === "Succeeded") return
        const streak = yield* persist(repo.endpointFailed(delivery.endpointId, now, pausePolicy))
        if (verdict._tag === "Failed") {
          yield* Effect.logWarning(`Webhook delivery failed: ${verdict.reason}`).pipe(Effect.annotateLogs(annotations))
        } else {
          yield* Effect.logDebug(`Webhook attempt failed, retrying in ${verdict.delayMs} ms: ${verdict.reason}`).pipe(
            Effect.annotateLogs(annotations)
          )
        }
        if (streak.newlyPaused) {
          yield* Effect.logWarning(
            `Webhook endpoint paused after ${streak.consecutiveFailures} consecutive failed attempts; ` +
              `resume it with: npm run webhooks -- resume ${delivery.endpointId}`
          ).pipe(Effect.annotateLogs({ endpointId: delivery.endpointId }))
        }
      }, (effect, delivery) =>
        effect.pipe(
          // Stopping mid-attempt gives the delivery back at once instead of when the lease runs out.
          Effect.onInterrupt(() => Effect.ignore(repo.releaseLease(delivery))),
          Effect.catchCause((cause) =>
            Cause.hasInterruptsOnly(cause)
              ? Effect.interrupt
              : Effect.logError("Webhook attempt could not be recorded; it is retried when its lease runs out", cause)
          )
        ))

      const deliverDue = claim(concurrency).pipe(
        Effect.flatMap((batch) => Effect.forEach(batch, attempt, { concurrency, discard: true }).pipe(Effect.as(batch.length)))
      )

      return WebhookDelivery.of({ claim, attempt, deliverDue })
    })
  ).pipe(Layer.provide([WebhookRepo.layer, WebhookTransport.layer]))
}

/** Rings `bell` whenever a delivery is inserted anywhere (NOTIFY from the outbox trigger). */
const listenForNew = (ring: Effect.Effect<unknown>) =>
  Effect.gen(function*() {
    const pg = yield* PgClient.PgClient
    const notifications = yield* pg.listen("hearken_webhooks")
    yield* ring
    return yield* Effect.forever(Queue.take(notifications).pipe(Effect.andThen(ring)))
  }).pipe(
    Effect.scoped,
    // A dropped connection (a restart, pg_terminate_backend) is listened to again.
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause) ? Effect.interrupt : Effect.logDebug("Webhook LISTEN connection lost", cause)
    ),
    Effect.andThen(Effect.sleep("1 second")),
    Effect.forever
  )

/**
 * The delivery loop: keeps up to `concurrency` attempts in flight, claiming
 * more whenever a slot frees, a new delivery is notified, or `pollMs` passes.
 */
const run = (listen: boolean) =>
  Effect.gen(function*() {
    const delivery = yield* WebhookDelivery
    const bell = yield* Queue.sliding<void>(1)
    const ring = Queue.offer(bell, undefined)
    const inFlight = yield* FiberSet.make<void, never>()
    let busy = 0
    if (listen) yield* Effect.forkScoped(listenForNew(ring))
    for (;;) {
      const free = concurrency - busy
      if (free <= 0) {
        yield* Queue.take(bell)
        continue
      }
      const batch = yield* delivery.claim(free).pipe(
        Effect.catchCause((cause) =>
          Cause.hasInterruptsOnly(cause)
            ? Effect.interrupt
            : Effect.logWarning("Cannot claim webhook deliveries; trying again", cause).pipe(
              Effect.andThen(Effect.sleep("1 second")),
              Effect.as([])
            )
        )
      )
      for (const claimed of batch) {
        busy++
        yield* FiberSet.run(inFlight, delivery.attempt(claimed).pipe(Effect.ensuring(Effect.suspend(() => (busy--, ring)))))
      }
      if (batch.length < free) yield* Effect.raceFirst(Queue.take(bell), Effect.sleep(pollMs))
    }
  })

/**
 * The webhook worker, a background layer: in the server unless
 * `WEBHOOK_WORKER=false`, or alone (`npm run worker`). Several may run
 * against one database; leases keep them from sending the same attempt twice.
 */
export class WebhookWorker {
  /** Always runs. LISTEN needs a connection of its own, which the embedded database cannot spare: it polls. */
  static readonly layerAlways = Layer.effectDiscard(Effect.gen(function*() {
    const config = yield* ServerConfig
    yield* Effect.forkScoped(run(Option.isSome(config.databaseUrl)))
    yield* Effect.logDebug("Webhook worker started")
  })).pipe(Layer.provide(WebhookDelivery.layer))

  /** Runs when `WEBHOOK_WORKER` is on (the default). */
  static readonly layer = Layer.unwrap(Effect.gen(function*() {
    const config = yield* ServerConfig
    return config.webhookWorker ? WebhookWorker.layerAlways : Layer.empty
  }))
}
