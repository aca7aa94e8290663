import { Clock, Effect, Fiber, Latch, Option } from "effect"
import type { SpanDropReason } from "./Metrics.js"

/**
 * The bounded export queue behind the OTLP tracer (decision 0019): ended
 * spans wait in a queue of at most `maxQueueSize`; one fiber sends them in
 * batches, one request at a time, each within `timeoutMs`. What does not fit,
 * and every batch a request fails or times out on, is dropped and counted,
 * never held: a collector that accepts and never answers costs one socket
 * and a full queue, not memory without bound.
 */
export interface SpanQueueOptions<A> {
  readonly maxQueueSize: number
  readonly maxBatchSize: number
  /** Longest a span waits for a batch to fill before it is sent anyway. */
  readonly intervalMs: number
  readonly timeoutMs: number
  /** Sends one batch; the queue times it out. */
  readonly send: (batch: Array<A>) => Effect.Effect<void, unknown>
  /** Counts dropped items; called synchronously, also from `offer`. */
  readonly dropped: (reason: SpanDropReason, count: number) => void
  /** What the warning names as the destination (the collector's URL). */
  readonly destination: string
}

export interface SpanQueue<A> {
  /** Queues the item `make` builds, if there is room (`make` is not called otherwise). */
  readonly offer: (make: () => A) => void
}

/** How often a queue that fills while the collector answers is warned about. */
export const queueFullWarningMs = 10 * 60_000

/** After the n-th failure in a row, the next export waits 1 s × 2^(n−1), at most a minute. */
export const backoffMs = (failures: number) => Math.min(1000 * 2 ** Math.max(0, failures - 1), 60_000)

const why: Record<SpanDropReason, (options: Omit<SpanQueueOptions<never>, "send">) => string> = {
  queue_full: (o) => `the export queue is full (${o.maxQueueSize} spans)`,
  timeout: (o) => `${o.destination} did not answer within ${o.timeoutMs} ms`,
  failed: (o) => `${o.destination} refused the spans or could not be reached`
}

type Outcome = "empty" | "sent" | Exclude<SpanDropReason, "queue_full">

/**
 * Starts the sending fiber in the current scope. Closing the scope stops it
 * and sends what is queued, within one timeout, unless the collector is failing.
 */
export const make = Effect.fnUntraced(function*<A>(options: SpanQueueOptions<A>) {
  let queue: Array<A> = []
  /** Exports failed in a row. */
  let failures = 0
  let dropped = 0
  /** An outage: spans are being dropped, and the warning has been logged. */
  let outage: { readonly dropped: number } | undefined
  const fullBatch = yield* Latch.make(false)

  const drop = (reason: SpanDropReason, count: number) => {
    options.dropped(reason, count)
    dropped += count
  }

  const offer = (make: () => A) => {
    if (queue.length >= options.maxQueueSize) return drop("queue_full", 1)
    queue.push(make())
    if (queue.length >= options.maxBatchSize) fullBatch.openUnsafe()
  }

  /** Sends the oldest batch, or drops it when the request fails or times out. */
  const exportBatch: Effect.Effect<Outcome> = Effect.suspend(() => {
    const batch = queue.splice(0, options.maxBatchSize)
    if (batch.length === 0) return Effect.succeed<Outcome>("empty")
    return options.send(batch).pipe(
      Effect.timeoutOption(options.timeoutMs),
      Effect.map((answered): Outcome => Option.isSome(answered) ? "sent" : "timeout"),
      Effect.catchCause(() => Effect.succeed<Outcome>("failed")),
      Effect.tap((outcome) => Effect.sync(() => outcome === "timeout" || outcome === "failed" ? drop(outcome, batch.length) : undefined)),
      // Stopped in the middle of a request: its spans go back for the final flush.
      Effect.onInterrupt(() => Effect.sync(() => (queue = batch.concat(queue))))
    )
  })

  /** Spans dropped as of the last report. */
  let reported = 0
  /** When a full queue was last warned about, the collector answering all the while. */
  let queueFullWarnedAt = -Infinity
  /**
   * One warning when an outage (timeouts, failures) starts dropping spans, and
   * one line when a cycle sends spans and drops none. A queue that fills while
   * the collector answers (bursts of spans) is no outage: it is warned about
   * at most once every `queueFullWarningMs`, with no recovery line. Never a
   * line per span or per batch.
   */
  const warn = (reason: SpanDropReason, when: string) =>
    Effect.logWarning(
      `Traces: dropping spans: ${why[reason](options)}. They are counted in hearken_trace_spans_dropped_total; ${when}`
    )

  const report = (reason: SpanDropReason, sent: boolean) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const droppedNow = dropped - reported
      reported = dropped
      if (outage === undefined && droppedNow > 0 && reason === "queue_full") {
        if (now - queueFullWarnedAt < queueFullWarningMs) return Effect.void
        queueFullWarnedAt = now
        return warn(reason, "this is logged at most once every 10 minutes.")
      }
      if (outage === undefined && droppedNow > 0) {
        outage = { dropped: dropped - droppedNow }
        return warn(reason, "this is logged once, and again once exports succeed.")
      }
      if (outage !== undefined && sent && droppedNow === 0) {
        const lost = dropped - outage.dropped
        outage = undefined
        return Effect.logInfo(`Traces: exports to ${options.destination} succeed again; ${lost} spans were dropped meanwhile`)
      }
      return Effect.void
    })

  /** Waits for the interval or a full batch, sends full batches, then backs off if a request failed. */
  const cycle = Effect.gen(function*() {
    yield* Effect.timeoutOption(fullBatch.await, options.intervalMs)
    fullBatch.closeUnsafe()
    let outcome: Outcome
    let sent = false
    do {
      outcome = yield* exportBatch
      sent ||= outcome === "sent"
    } while (outcome === "sent" && queue.length >= options.maxBatchSize)
    if (outcome === "timeout" || outcome === "failed") {
      yield* report(outcome, sent)
      failures++
      yield* Effect.sleep(backoffMs(failures))
    } else {
      yield* report("queue_full", sent)
      failures = 0
    }
  })

  const flush = Effect.gen(function*() {
    while (failures === 0 && queue.length > 0) {
      const outcome = yield* exportBatch
      if (outcome !== "sent") return
    }
  })

  const sending = yield* Effect.forkScoped(Effect.forever(cycle))
  yield* Effect.addFinalizer(() =>
    Fiber.interrupt(sending).pipe(Effect.andThen(flush), Effect.timeoutOption(options.timeoutMs), Effect.asVoid)
  )
  return { offer } satisfies SpanQueue<A>
})
