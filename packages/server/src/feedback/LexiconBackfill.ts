import { Effect, Layer, Schedule } from "effect"
import { Sanitizer } from "../content/Sanitizer.js"
import { Posts } from "./Posts.js"
import { lexiconOf } from "../lexicon/lexicon.js"

/** Posts per round of the back-fill. */
const batchSize = 500

/**
 * Computes the lexicon of posts written before it existed, in the
 * background after start-up, 500 at a time. Suggestions find them once done.
 * The lexicon is written by `Posts` (with each post) and read by suggestions;
 * its wording (`lexicon/lexicon.ts`) lives below both, so neither feature
 * imports the other, and this back-fill of posts lives with the posts.
 */
export const layer = Layer.effectDiscard(Effect.gen(function*() {
  const posts = yield* Posts
  const sanitizer = yield* Sanitizer
  const step = Effect.gen(function*() {
    const batch = yield* posts.missingLexicon(batchSize)
    if (batch.length === 0) return false
    yield* posts.setLexicons(batch.map((post) => ({ id: post.id, ...lexiconOf({ ...post, text: sanitizer.text(post.content) }) })))
    return batch.length === batchSize
  })
  const loop: Effect.Effect<void> = Effect.flatMap(step, (more) => more ? loop : Effect.void)
  yield* Effect.forkScoped(
    loop.pipe(
      // A database that went away comes back: try again, up to about a minute apart.
      Effect.retry(Schedule.min([Schedule.exponential("1 second"), Schedule.spaced("1 minute")])),
      Effect.catchCause((cause) => Effect.logWarning("Suggestion index back-fill stopped", cause))
    )
  )
}))
