import { Cause, Option, Tracer } from "effect"
import { OtlpResource, type OtlpTracer } from "effect/observability"

/**
 * Spans as OTLP encodes them. Effect's `OtlpTracer` does the same, but only
 * behind its own unbounded exporter (decision 0019), so its span class and
 * encoding are not reachable: these follow its mapping.
 */
export type OtlpSpan = OtlpTracer.ScopeSpan["spans"][number]

const kinds: Record<Tracer.SpanKind, number> = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 }
const statusOk = 1
const statusError = 2

/** A span that hands itself to `onEnd` once, when it ends sampled. */
export class ExportedSpan extends Tracer.NativeSpan {
  constructor(
    options: ConstructorParameters<typeof Tracer.NativeSpan>[0],
    private readonly onEnd: (span: ExportedSpan) => void
  ) {
    super(options)
  }

  override end(endTime: bigint, exit: Parameters<Tracer.Span["end"]>[1]): void {
    if (this.status._tag === "Ended") return
    super.end(endTime, exit)
    if (this.sampled) this.onEnd(this)
  }
}

const attributes = (entries: Iterable<[string, unknown]>) => OtlpResource.entriesToAttributes(entries)

/** An ended span in OTLP form: a failure becomes an error status and `exception` events, an interruption stays unset. */
export const toOtlpSpan = (span: ExportedSpan): OtlpSpan => {
  if (span.status._tag !== "Ended") throw new Error("toOtlpSpan: the span has not ended")
  const { startTime, endTime, exit } = span.status
  const spanAttributes = span._attributes === undefined ? [] : attributes(span._attributes)
  const events = (span._events ?? []).map(([name, time, eventAttributes]) => ({
    name,
    timeUnixNano: String(time),
    attributes: attributes(Object.entries(eventAttributes)),
    droppedAttributesCount: 0
  }))
  let status: OtlpSpan["status"] = { code: statusOk }
  if (exit._tag === "Failure") {
    if (Cause.hasInterruptsOnly(exit.cause)) {
      status = { code: 0 }
      spanAttributes.push({ key: "effect.fiber.interrupted", value: { boolValue: true } })
    } else {
      const errors = Cause.prettyErrors(exit.cause, { includeCauseInStack: true })
      if (errors.length > 0) status = { code: statusError, message: errors[0]!.message }
      for (const error of errors) {
        events.push({
          name: "exception",
          timeUnixNano: String(endTime),
          droppedAttributesCount: 0,
          attributes: attributes([
            ["exception.type", error.name],
            ["exception.message", error.message],
            ["exception.stacktrace", error.stack ?? "No stack trace available"]
          ])
        })
      }
    }
  }
  return {
    traceId: span.traceId.padStart(32, "0"),
    spanId: span.spanId,
    parentSpanId: Option.getOrUndefined(span.parent)?.spanId,
    name: span.name,
    kind: kinds[span.kind],
    startTimeUnixNano: String(startTime),
    endTimeUnixNano: String(endTime),
    attributes: spanAttributes,
    droppedAttributesCount: 0,
    events,
    droppedEventsCount: 0,
    status,
    links: span.links.map((link) => ({
      traceId: link.span.traceId.padStart(32, "0"),
      spanId: link.span.spanId,
      attributes: attributes(Object.entries(link.attributes)),
      droppedAttributesCount: 0
    })),
    droppedLinksCount: 0
  }
}
