import { Effect, Metric } from "effect"
import type { GaugeReader } from "../observability/Gauges.js"
import { labelled } from "../observability/Metrics.js"
import { DeliveryQueue } from "./DeliveryQueue.js"

/** The webhook queue's gauges (decision 0014), database-wide: every instance reports the same values. */

const webhookQueue = (attributes: Record<string, string>) =>
  Metric.gauge("hearken_webhook_queue_depth", {
    description: "Webhook deliveries waiting, database-wide: due (to send now), scheduled (a retry later), held (endpoint paused)",
    attributes
  })
const webhookOldestDue = Metric.gauge("hearken_webhook_oldest_due_age_seconds", {
  description: "How long the oldest due webhook delivery has been waiting (0 when none is due), database-wide"
})
const webhookPaused = Metric.gauge("hearken_webhook_paused_endpoints", {
  description: "Webhook endpoints paused after repeated failures, database-wide"
})

const queueOf = labelled(webhookQueue)

export const reader: Effect.Effect<GaugeReader, never, DeliveryQueue> = Effect.gen(function*() {
  const webhooks = yield* DeliveryQueue
  return Effect.gen(function*() {
    const queue = yield* webhooks.queueState
    if (queue === undefined) return
    yield* Metric.update(queueOf({ state: "due" }), queue.due)
    yield* Metric.update(queueOf({ state: "scheduled" }), queue.scheduled)
    yield* Metric.update(queueOf({ state: "held" }), queue.held)
    yield* Metric.update(webhookOldestDue, queue.oldestDueSeconds)
    yield* Metric.update(webhookPaused, queue.paused)
  })
})
