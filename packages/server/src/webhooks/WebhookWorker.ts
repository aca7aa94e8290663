import { PgClient } from "@effect/sql-pg"
import { Cause, Effect, Fiber, Layer, Option, Queue } from "effect"
import { ServerConfig } from "../config.js"
import { concurrency, pollMs } from "./limits.js"
import { WebhookTransport } from "./Transport.js"
import { persistMs, WebhookDelivery } from "./WebhookDelivery.js"

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
 * Attempts are tracked in `inFlight`, not tied to the loop, so that stopping
 * the loop lets them finish.
 */
const run = (listen: boolean, inFlight: Set<Fiber.Fiber<void>>) =>
  Effect.gen(function*() {
    const delivery = yield* WebhookDelivery
    const bell = yield* Queue.sliding<void>(1)
    const ring = Queue.offer(bell, undefined)
    const busy = new Map<string, number>()
    const count = (endpointId: string, change: number) => {
      const n = (busy.get(endpointId) ?? 0) + change
      if (n === 0) busy.delete(endpointId)
      else busy.set(endpointId, n)
    }
    if (listen) yield* Effect.forkScoped(listenForNew(ring))
    for (;;) {
      const free = concurrency - inFlight.size
      if (free <= 0) {
        yield* Queue.take(bell)
        continue
      }
      const batch = yield* delivery.claim(free, busy).pipe(
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
        const fiber = yield* Effect.forkDetach(delivery.attempt(claimed))
        inFlight.add(fiber)
        count(claimed.endpointId, 1)
        fiber.addObserver(() => {
          inFlight.delete(fiber)
          count(claimed.endpointId, -1)
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
 * Needs the `WebhookRepo`, which `App.ts` provides.
 */

/** Always runs. LISTEN needs a connection of its own, which the embedded database cannot spare: it polls. */
export const layerAlways = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* ServerConfig
  const inFlight = new Set<Fiber.Fiber<void>>()
  // Finalizers run last-added first: the loop stops, then the attempts drain.
  yield* Effect.addFinalizer(() => drain(inFlight, config.webhookTimeoutMs + persistMs + 1_000))
  yield* Effect.forkScoped(run(Option.isSome(config.databaseUrl), inFlight))
  yield* Effect.logDebug("Webhook worker started")
})).pipe(Layer.provide(WebhookDelivery.layerNoDeps), Layer.provide(WebhookTransport.layer))

/** Runs when `WEBHOOK_WORKER` is on (the default). */
export const layer = Layer.unwrap(Effect.gen(function*() {
  const config = yield* ServerConfig
  return config.webhookWorker ? layerAlways : Layer.empty
}))
