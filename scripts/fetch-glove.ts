/**
 * Fetches the GloVe vectors of the tests' fake embeddings server into their
 * cache unless they are there (`test/support/glove.ts`), and prints where.
 */
import { ensureGlove } from "../test/support/glove.ts"

const started = performance.now()
const model = await ensureGlove()
console.log(`GloVe vectors: ${model.directory} (${model.words.length} words, ready in ${Math.round(performance.now() - started)} ms)`)
