import { Effect } from "effect"
import { TestClock } from "effect/testing"

/**
 * Starts virtual time at the real clock's, on a whole second, so that
 * timestamps look like today's; gives that instant (ms since the epoch).
 */
export const startClock = Effect.sync(() => Math.floor(Date.now() / 1000) * 1000).pipe(
  Effect.tap((now) => TestClock.setTime(now))
)
