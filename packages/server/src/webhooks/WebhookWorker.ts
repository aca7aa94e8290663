import type { PgClient } from "@effect/sql-pg"
import { Cause, Duration, Effect, Fiber, Layer, Option, Queue } from "effect"
import { WebhookConfig } from "../config/webhooks.js"
import { Sessions } from "../sql/Database.js"
import * as Metrics from "../observability/Metrics.js"
import { concurrency, lateAfterMs, lateSlots, pollMs } from "./limits.js"
import { WebhookTransport } from "./Transport.js"
import { persistMs, WebhookDelivery } from "./WebhookDelivery.js"
import type { ClaimedDelivery, Load } from "./DeliveryQueue.js"

/** Rings `bell` whenever a delivery is inserted anywhere (NOTIFY from the outbox trigger). */
const listenForNew = (pg: PgClient.PgClient, ring: Effect.Effect<unknown>) =>
  Effect.gen(function*() {
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

/** One attempt in flight, as the loop counts it. */
interface Attempt {
  readonly delivery: ClaimedDelivery
  /** No answer after `lateAfterMs`: it holds no slot. */
  late: boolean
  done: boolean
}

/**
 * What a worker has in flight, by endpoint, organization and lane, and which
 * attempts are late (decision 0026): the claim keeps within the limits of
 * `limits.ts` from it. Every count is of attempts in flight, so it stays as
 * small as they are.
 */
class InFlightLoad {
  readonly endpoints = new Map<string, number>()
  readonly organizations = new Map<string, number>()
  readonly lateEndpoints = new Map<string, number>()
  /** Attempts to endpoints in the stalled lane, late ones included. */
  stalled = 0
  /** Attempts holding a slot, by lane. */
  readonly holding = { healthy: 0, stalled: 0 }
  late = 0
  /** Late attempts that found no room among the late ones: they keep their slot until room frees. */
  private readonly waiting: Array<Attempt> = []

  get slotsHeld() {
    return this.holding.healthy + this.holding.stalled
  }

  get load(): Load {
    return { endpoints: this.endpoints, organizations: this.organizations, stalled: this.stalled, late: new Set(this.lateEndpoints.keys()) }
  }

  start(delivery: ClaimedDelivery): Attempt {
    count(this.endpoints, delivery.endpointId, 1)
    count(this.organizations, delivery.organizationId, 1)
    if (delivery.stalled) this.stalled++
    this.holding[lane(delivery)]++
    return { delivery, late: false, done: false }
  }

  /** Yields whether a slot was freed. */
  turnLate(attempt: Attempt): boolean {
    if (attempt.done || attempt.late) return false
    if (this.late >= lateSlots) {
      this.waiting.push(attempt)
      return false
    }
    attempt.late = true
    this.late++
    this.holding[lane(attempt.delivery)]--
    count(this.lateEndpoints, attempt.delivery.endpointId, 1)
    return true
  }

  end(attempt: Attempt) {
    attempt.done = true
    const { delivery } = attempt
    count(this.endpoints, delivery.endpointId, -1)
    count(this.organizations, delivery.organizationId, -1)
    if (delivery.stalled) this.stalled--
    if (!attempt.late) {
      this.holding[lane(delivery)]--
      const waiting = this.waiting.indexOf(attempt)
      if (waiting >= 0) this.waiting.splice(waiting, 1)
      return
    }
    this.late--
    count(this.lateEndpoints, delivery.endpointId, -1)
    const next = this.waiting.shift()
    if (next !== undefined) this.turnLate(next)
  }

  get gauges() {
    return Effect.all([
      Metrics.webhookAttemptsInFlight("healthy", this.holding.healthy),
      Metrics.webhookAttemptsInFlight("stalled", this.holding.stalled),
      Metrics.webhookAttemptsInFlight("late", this.late)
    ], { discard: true })
  }
}

const lane = (delivery: ClaimedDelivery) => delivery.stalled ? "stalled" : "healthy"

const count = (map: Map<string, number>, key: string, change: number) => {
  const n = (map.get(key) ?? 0) + change
  if (n <= 0) map.delete(key)
  else map.set(key, n)
}

/**
 * The delivery loop: keeps up to `concurrency` attempts in flight that hold a
 * slot, claiming more whenever a slot frees (an attempt ends or turns late), a
 * new delivery is notified, or `pollMs` passes. Attempts are tracked in
 * `inFlight`, not tied to the loop, so that stopping the loop lets them finish.
 */
const run = (listener: Option.Option<PgClient.PgClient>, inFlight: Set<Fiber.Fiber<void>>) =>
  Effect.gen(function*() {
    const delivery = yield* WebhookDelivery
    const bell = yield* Queue.sliding<void>(1)
    const ring = Queue.offer(bell, undefined)
    const load = new InFlightLoad()
    if (Option.isSome(listener)) yield* Effect.forkScoped(listenForNew(listener.value, ring))
    for (;;) {
      // Every change to the load rings the bell, so the gauges are set here.
      yield* load.gauges
      const free = concurrency - load.slotsHeld
      if (free <= 0) {
        yield* Queue.take(bell)
        continue
      }
      const batch = yield* delivery.claim(free, load.load).pipe(
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
        const attempt = load.start(claimed)
        // Late after a second without an answer: the slot goes to the next delivery, and this
        // endpoint gets no more from this worker until the attempt ends.
        const whenLate = Effect.sleep(lateAfterMs).pipe(
          Effect.andThen(Effect.suspend(() => load.turnLate(attempt) ? ring : Effect.void))
        )
        const fiber = yield* Effect.forkDetach(
          Effect.forkChild(whenLate).pipe(Effect.andThen(delivery.attempt(claimed)))
        )
        inFlight.add(fiber)
        fiber.addObserver(() => {
          inFlight.delete(fiber)
          load.end(attempt)
          Effect.runFork(ring)
        })
      }
      if (batch.length < free) yield* Effect.raceFirst(Queue.take(bell), Effect.sleep(pollMs))
    }
  })

/**
 * On shutdown the loop stops claiming, and the attempts in flight finish and
 * record their outcome, so that a deploy does not send them twice. Past the
 * grace (the timeout plus the write's retries) they are interrupted and give
 * their deliveries back.
 */
const drain = (inFlight: Set<Fiber.Fiber<void>>, graceMs: number) =>
  Effect.suspend(() => Fiber.awaitAll([...inFlight])).pipe(
    Effect.timeoutOrElse({ duration: graceMs, orElse: () => Fiber.interruptAll([...inFlight]) }),
    Effect.asVoid
  )

/**
 * The webhook worker, a background layer: in the server unless
 * `WEBHOOK_WORKER=false`, or alone (`npm run worker`). Several may run
 * against one database; leases keep them from sending the same attempt twice.
 * Needs the `DeliveryQueue`, which `App.ts` provides.
 */

/**
 * Always runs. LISTEN needs a session of its own (`Database.Sessions`): where there is none (the
 * embedded database cannot spare one; a transaction-mode pooler without `DATABASE_DIRECT_URL` has
 * none to give), it polls every `pollMs`. `announce`: a stop begins with a `Draining:` line (the
 * dedicated worker's; the server's listener says its own).
 */
const make = (announce: boolean) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const config = yield* WebhookConfig
    const { listener } = yield* Sessions
    const inFlight = new Set<Fiber.Fiber<void>>()
    const graceMs = config.webhookTimeoutMs + persistMs + 1_000
    // Finalizers run last-added first: the line, then the loop stops, then the attempts drain.
    yield* Effect.addFinalizer(() => drain(inFlight, graceMs))
    yield* Effect.forkScoped(run(listener, inFlight))
    if (announce) {
      yield* Effect.addFinalizer(() =>
        Effect.suspend(() =>
          Effect.logInfo(
            `Draining: no new webhook deliveries are claimed; attempts in flight: ${inFlight.size}, ` +
              `given ${Duration.format(Duration.millis(graceMs))} to finish (then given back)`
          )
        )
      )
    }
    yield* Effect.logDebug("Webhook worker started")
  })).pipe(Layer.provide(WebhookDelivery.layerNoDeps), Layer.provide(WebhookTransport.layer))

/** `npm run worker`: always runs, and says when it begins to stop. */
export const layerAlways = make(true)

/** In the server: runs when `WEBHOOK_WORKER` is on (the default). */
export const layer = Layer.unwrap(Effect.gen(function*() {
  const config = yield* WebhookConfig
  return config.webhookWorker ? make(false) : Layer.empty
}))
