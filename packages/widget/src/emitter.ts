/**
 * The host-event emitter: what the widget tells the host page
 * (`WidgetEvents`). In the page (`widget.js`) an event is a DOM event on the
 * host's element and a call of `onEvent`; in the frame, a message to the
 * parent window (`frame.ts`). A mounted widget's events stop at `destroy`:
 * an answer that arrives later tells the host nothing.
 */
import type { ClientError, EndpointId } from "@hearken/api/thin"
import type { WidgetEvent, WidgetEvents } from "./options.js"

export type Emit = <K extends keyof WidgetEvents>(type: K, detail: WidgetEvents[K]) => void

/** A failed API call, as `hearken:error`: the error's `_tag` and the endpoint, never what the visitor typed. */
export type Failed = (operation: EndpointId, error: ClientError<EndpointId>) => void

export interface Emitter {
  readonly emit: Emit
  readonly failed: Failed
}

/** Events to `emitTo` while `live()`. */
export const emitter = (emitTo: Emit, live: () => boolean): Emitter => {
  const emit: Emit = (type, detail) => {
    if (live()) emitTo(type, detail)
  }
  return { emit, failed: (operation, error) => emit("hearken:error", { _tag: error._tag, operation }) }
}

/**
 * `widget.js`, while `live()`: each event bubbles out of the shadow root from
 * `host()` (the target, or the element the widget is in), then goes to
 * `onEvent`.
 */
export const domEvents = (host: () => Element, onEvent: ((event: WidgetEvent) => void) | undefined, live: () => boolean): Emit =>
  (type, detail) => {
    if (!live()) return
    host().dispatchEvent(new CustomEvent(type, { detail, bubbles: true, composed: true }))
    try {
      onEvent?.({ type, detail } as WidgetEvent)
    } catch (error) {
      reportError(error) // the host's bug: reported, and the widget goes on
    }
  }
