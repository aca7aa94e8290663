/**
 * The messages between the host page (`embed.js`) and the frame (`frame.js`),
 * sent with `postMessage` to one origin and accepted only from the other
 * window at its expected origin. Nothing the visitor types crosses to the
 * host: events carry ids and slugs.
 */
import type { MountOptions, WidgetEvents } from "./options.js"

/** The options the frame is given: `MountOptions` without the probe (the frame calls its own origin). */
export type FrameOptions = Omit<MountOptions, "probeUrl">

/** From the frame to the host page. */
export type FromFrame =
  /** Loaded: send `init`. */
  | { readonly hearken: "hello" }
  /** Rendered: the launcher's label, the widget's direction, and its accent and the text on it. */
  | { readonly hearken: "ready"; readonly label: string; readonly dir: "ltr" | "rtl"; readonly colors: readonly [string, string] }
  /** The widget's height in CSS pixels, each time it changes. */
  | { readonly hearken: "height"; readonly height: number }
  | { readonly hearken: "event"; readonly type: keyof WidgetEvents; readonly detail: unknown }
  /** Escape was pressed in the frame. */
  | { readonly hearken: "escape" }

/** From the host page to the frame. */
export type ToFrame =
  | { readonly hearken: "init"; readonly options: FrameOptions }
  | { readonly hearken: "token"; readonly token: string | undefined }
  /** The launcher opened: focus the widget's first control. */
  | { readonly hearken: "focus" }

/** The host page's origin, which `embed.js` puts in the frame's URL: `/widget/frame#origin=…`. */
export const originParameter = "origin"
