import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Logger, Scope } from "effect"
import { TestClock } from "effect/testing"
import type { SpanDropReason } from "../packages/server/src/observability/Metrics.js"
import { backoffMs, make } from "../packages/server/src/observability/SpanQueue.js"

/**
 * Decision 0019: the OTLP export queue, on the TestClock. A collector that
 * hangs costs one request at a time, each cut at the timeout, its batch
 * dropped and counted, with growing pauses; a full queue drops new spans;
 * one warning per outage.
 */
type Answer = "hang" | "ok" | "slow" | "fail"

const setup = Effect.fnUntraced(function*(answer: { current: Answer }, sizes = { maxQueueSize: 4, maxBatchSize: 2 }) {
  const sent: Array<Array<number>> = []
  const dropped: Array<[SpanDropReason, number]> = []
  let inFlight = 0
  let mostInFlight = 0
  const queue = yield* make<number>({
    ...sizes,
    intervalMs: 100,
    timeoutMs: 500,
    destination: "the collector",
    dropped: (reason, count) => void dropped.push([reason, count]),
    send: (batch) =>
      Effect.suspend(() => {
        sent.push(batch)
        mostInFlight = Math.max(mostInFlight, ++inFlight)
        const request = answer.current === "hang"
          ? Effect.never
          : answer.current === "ok"
          ? Effect.void
          : answer.current === "slow"
          ? Effect.sleep(200)
          : Effect.fail("503")
        return Effect.ensuring(request, Effect.sync(() => inFlight--))
      })
  })
  return { queue, sent, dropped, mostInFlight: () => mostInFlight }
})

/** Lets the sending fiber run up to its next wait. */
const settle = TestClock.adjust(0)

const logged = () => {
  const lines: Array<string> = []
  const logger = Logger.make(({ logLevel, message }) => {
    lines.push(`${logLevel} ${Array.isArray(message) ? message.join(" ") : String(message)}`)
  })
  return { lines, layer: Logger.layer([logger]) }
}

describe("SpanQueue", () => {
  it("waits 1 s, 2 s, 4 s … after failures in a row, at most a minute", () => {
    expect([1, 2, 3, 4, 7, 8, 20].map(backoffMs)).toEqual([1000, 2000, 4000, 8000, 60_000, 60_000, 60_000])
  })

  it.effect("cuts a request the collector never answers at the timeout, drops its batch, and backs off, one request at a time", () =>
    Effect.gen(function*() {
      const answer = { current: "hang" as Answer }
      const { queue, sent, dropped, mostInFlight } = yield* setup(answer)
      for (const n of [1, 2, 3]) queue.offer(() => n)
      yield* settle
      // A full batch goes at once; the third span waits.
      expect(sent).toEqual([[1, 2]])
      yield* TestClock.adjust(499)
      expect(dropped).toEqual([])
      yield* TestClock.adjust(1)
      expect(dropped).toEqual([["timeout", 2]])

      // 1 s of backoff, then the interval: nothing is sent before.
      yield* TestClock.adjust(1099)
      expect(sent).toHaveLength(1)
      yield* TestClock.adjust(1)
      expect(sent).toEqual([[1, 2], [3]])
      yield* TestClock.adjust(500)
      expect(dropped).toEqual([["timeout", 2], ["timeout", 1]])

      // The second failure in a row: 2 s.
      queue.offer(() => 4)
      yield* TestClock.adjust(2099)
      expect(sent).toHaveLength(2)
      yield* TestClock.adjust(1)
      expect(sent).toHaveLength(3)
      expect(mostInFlight()).toBe(1)

      // The collector answers again: spans go through.
      answer.current = "ok"
      yield* TestClock.adjust(500 + 4000)
      queue.offer(() => 5)
      yield* TestClock.adjust(100)
      expect(sent.at(-1)).toEqual([5])
      expect(dropped.filter(([reason]) => reason !== "timeout")).toEqual([])
    }).pipe(Effect.scoped))

  it.effect("drops new spans when the queue is full, without building them", () =>
    Effect.gen(function*() {
      const answer = { current: "hang" as Answer }
      const { queue, dropped } = yield* setup(answer)
      let built = 0
      for (let n = 0; n < 10; n++) queue.offer(() => (built++, n))
      // 4 queued and 6 refused; then the hanging request takes 2, so 2 of 3 more fit.
      yield* settle
      for (let n = 0; n < 3; n++) queue.offer(() => (built++, n))
      expect(built).toBe(6)
      expect(dropped).toEqual([["queue_full", 1], ["queue_full", 1], ["queue_full", 1], ["queue_full", 1],
        ["queue_full", 1], ["queue_full", 1], ["queue_full", 1]])
      // Let the final flush at the end of the scope go through.
      answer.current = "ok"
    }).pipe(Effect.scoped))

  it.effect("warns once per outage, says when exports succeed again, and warns again on the next outage", () => {
    const log = logged()
    return Effect.gen(function*() {
      const answer = { current: "fail" as Answer }
      const { queue } = yield* setup(answer)
      for (let round = 0; round < 5; round++) {
        queue.offer(() => round)
        yield* TestClock.adjust(60_000)
      }
      expect(log.lines).toEqual([
        "Warn Traces: dropping spans: the collector refused the spans or could not be reached. They are counted in hearken_trace_spans_dropped_total; this is logged once, and again once exports succeed."
      ])
      answer.current = "ok"
      queue.offer(() => 9)
      yield* TestClock.adjust(60_000)
      expect(log.lines.slice(1)).toEqual(["Info Traces: exports to the collector succeed again; 5 spans were dropped meanwhile"])
      answer.current = "hang"
      queue.offer(() => 10)
      yield* TestClock.adjust(60_000)
      queue.offer(() => 11)
      yield* TestClock.adjust(60_000)
      expect(log.lines.slice(2)).toEqual([
        "Warn Traces: dropping spans: the collector did not answer within 500 ms. They are counted in hearken_trace_spans_dropped_total; this is logged once, and again once exports succeed."
      ])
    }).pipe(Effect.scoped, Effect.provide(log.layer))
  })

  it.effect("warns of a queue that fills while the collector answers at most once every 10 minutes, with no recovery line", () => {
    const log = logged()
    const full = "Warn Traces: dropping spans: the export queue is full (4 spans). They are counted in " +
      "hearken_trace_spans_dropped_total; this is logged at most once every 10 minutes."
    return Effect.gen(function*() {
      // The collector answers every request, in 200 ms.
      const answer = { current: "slow" as Answer }
      const { queue, dropped } = yield* setup(answer)
      // A burst of 8 every minute for 12 minutes: 2 go out at once, 4 wait, 2 are dropped.
      for (let minute = 0; minute < 12; minute++) {
        for (let n = 0; n < 8; n++) queue.offer(() => n)
        yield* TestClock.adjust(60_000)
      }
      // The first burst finds the sending fiber not started yet: 4 queued, 4 dropped.
      expect(dropped.filter(([reason]) => reason === "queue_full")).toHaveLength(4 + 11 * 2)
      expect(dropped.filter(([reason]) => reason !== "queue_full")).toEqual([])
      // The first burst, and the eleventh (10 minutes later): no "succeed again" between them.
      expect(log.lines).toEqual([full, full])
    }).pipe(Effect.scoped, Effect.provide(log.layer))
  })

  it.effect("sends what is queued when its scope closes, a request in flight included", () =>
    Effect.gen(function*() {
      const answer = { current: "hang" as Answer }
      const scope = yield* Scope.make()
      const { queue, sent, dropped } = yield* setup(answer, { maxQueueSize: 8, maxBatchSize: 2 }).pipe(Scope.provide(scope))
      queue.offer(() => 1)
      queue.offer(() => 2)
      queue.offer(() => 3)
      yield* settle
      expect(sent).toEqual([[1, 2]])
      // The collector answers at last, as the server stops in the middle of the request.
      answer.current = "ok"
      yield* Scope.close(scope, Exit.void)
      expect(sent).toEqual([[1, 2], [1, 2], [3]])
      expect(dropped).toEqual([])
    }))
})
