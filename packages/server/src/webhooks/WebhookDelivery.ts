import { Cause, Clock, Context, Effect, Layer, Random, Schedule } from "effect"
import { randomUUID } from "node:crypto"
import { WebhookConfig } from "../config/webhooks.js"
import { linkTo } from "../observability/Tracing.js"
import * as Metrics from "../observability/Metrics.js"
import { type AttemptResult, judge, type RetryPolicy } from "./RetryPolicy.js"
import { deliveryHeaders, secretKey } from "./signature.js"
import { WebhookTransport } from "./Transport.js"
import { concurrency, lateAfterMs, leaseMs, pausePolicy, perEndpoint, perOrganization, perStalledEndpoint, stalledSlots } from "./limits.js"
import { type ClaimedDelivery, type ClaimLimits, type Completion, DeliveryQueue, type Load, noLoad } from "./DeliveryQueue.js"

const limits: ClaimLimits = { perEndpoint, perStalledEndpoint, perOrganization, stalledSlots }

/**
 * The write of an outcome survives a dropped connection: it is one idempotent
 * statement (id and lease token). 6.35 s of retries in all, well inside what
 * is left of a lease.
 */
const persist = Effect.retry({ schedule: Schedule.exponential("50 millis"), times: 7 })
export const persistMs = 6_350

const httpStatus = (result: AttemptResult) => result._tag === "Answered" ? result.status : null
const responseExcerpt = (result: AttemptResult) => result._tag === "Answered" ? result.excerpt : null

/** Sending: one attempt of one delivery, and claiming what is due. */
export class WebhookDelivery extends Context.Service<WebhookDelivery, {
  /**
   * Leases up to `limit` deliveries that are due by the `Clock`, keeping what
   * is in flight (`load`: the caller's attempts) within `limits.ts`.
   */
  readonly claim: (limit: number, load?: Load) => Effect.Effect<ReadonlyArray<ClaimedDelivery>>
  /** Signs and sends one attempt, then records its outcome and its endpoint's streak. */
  readonly attempt: (delivery: ClaimedDelivery) => Effect.Effect<void>
  /** Claims what is due and attempts all of it; yields how many. */
  readonly deliverDue: Effect.Effect<number>
}>()("hearken/WebhookDelivery") {
  /** Needs the `DeliveryQueue` and the `WebhookTransport`. */
  static readonly layerNoDeps = Layer.effect(
    WebhookDelivery,
    Effect.gen(function*() {
      const config = yield* WebhookConfig
      const repo = yield* DeliveryQueue
      const transport = yield* WebhookTransport
      const policy: RetryPolicy = { maxAttempts: config.webhookMaxAttempts, baseMs: config.webhookRetryBaseMs }
      const lease = leaseMs(config.webhookTimeoutMs)

      const claim = Effect.fn("WebhookDelivery.claim")(function*(limit: number, load: Load = noLoad) {
        const nowMs = yield* Clock.currentTimeMillis
        return yield* repo.claim({ nowMs, limit, limits, load, leaseMs: lease, token: randomUUID() })
      }, Effect.orDie)

      /** The attempt a worker died in counted; past the limit there is nothing left to send. */
      const send = (delivery: ClaimedDelivery, sentAt: number): Effect.Effect<AttemptResult> =>
        delivery.attempts > policy.maxAttempts
          ? Effect.succeed({ _tag: "Refused", reason: "no attempts left: the worker of the last one stopped before recording it" })
          : transport.send(
            delivery.url,
            deliveryHeaders([delivery.secret, ...delivery.previousSecrets].map(secretKey), delivery.messageId, Math.floor(sentAt / 1000), delivery.body),
            delivery.body
          )

      const attempt = Effect.fn("WebhookDelivery.attempt")(function*(delivery: ClaimedDelivery) {
        // A trace of its own (it runs in the background), linked to the request that created the post.
        yield* linkTo(delivery.traceparent)
        yield* Effect.annotateCurrentSpan({
          "hearken.webhook.delivery_id": delivery.id,
          "hearken.webhook.endpoint_id": delivery.endpointId,
          "hearken.webhook.attempt": delivery.attempts,
          "hearken.webhook.stalled": delivery.stalled
        })
        const sentAt = yield* Clock.currentTimeMillis
        const result = yield* send(delivery, sentAt)
        const now = yield* Clock.currentTimeMillis
        // What the attempt cost: the time it held its place in the worker, by lane.
        yield* Metrics.webhookAttemptTime(delivery.stalled ? "stalled" : "healthy", (now - sentAt) / 1000)
        const verdict = judge(policy, delivery.attempts, result, yield* Random.next, now)
        // A failure that held the slot a second or more, or until the timeout, puts the endpoint in
        // the stalled lane; a prompt one (a 503 at once) does not (decision 0026).
        const stalled = verdict._tag !== "Succeeded" && (result._tag === "TimedOut" || now - sentAt >= lateAfterMs)
        const base = { nowMs: now, httpStatus: httpStatus(result), response: responseExcerpt(result), stalled }
        const completion: Completion = verdict._tag === "Succeeded"
          ? { ...base, status: "succeeded", error: null }
          : verdict._tag === "Retry"
          ? { ...base, status: "pending", error: verdict.reason, nextAttemptMs: now + verdict.delayMs }
          : { ...base, status: "failed", error: verdict.reason }
        const log = Effect.annotateLogs({
          deliveryId: delivery.id,
          messageId: delivery.messageId,
          endpointId: delivery.endpointId,
          attempt: delivery.attempts
        })
        const recorded = yield* persist(repo.complete(delivery, completion, pausePolicy))
        if (!recorded.recorded) {
          return yield* Effect.logWarning("Webhook attempt not recorded: its lease had run out, or its outcome was already written").pipe(log)
        }
        yield* Metrics.webhookAttempt(verdict._tag === "Succeeded" ? "succeeded" : verdict._tag === "Retry" ? "retry" : "failed")
        if (verdict._tag === "Failed") {
          yield* Effect.logWarning(`Webhook delivery failed: ${verdict.reason}`).pipe(log)
        } else if (verdict._tag === "Retry") {
          yield* Effect.logDebug(`Webhook attempt failed, retrying in ${verdict.delayMs} ms: ${verdict.reason}`).pipe(log)
        }
        if (recorded.newlyPaused) {
          yield* Effect.logWarning(
            `Webhook endpoint paused after ${recorded.consecutiveFailures} consecutive failed attempts; ` +
              `resume it with: npm run webhooks -- resume ${delivery.endpointId}`
          ).pipe(Effect.annotateLogs({ endpointId: delivery.endpointId }))
        }
      }, (effect, delivery) =>
        effect.pipe(
          // Interrupted mid-attempt (a shutdown past its grace): give the delivery back at once.
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
  )

  static readonly layer = this.layerNoDeps.pipe(Layer.provide([DeliveryQueue.layer, WebhookTransport.layer]))
}
