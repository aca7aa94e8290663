import { Data, Effect, Stream } from "effect"
import type { HttpClientError, HttpClientResponse } from "effect/http"

/** An answer that went past what its reader takes; the rest of it was never read. */
export class BodyTooLarge extends Data.TaggedError("BodyTooLarge")<{ readonly maxBytes: number }> {}

/**
 * The body of an outbound call's answer, read as it arrives, at most
 * `maxBytes` of it: past that, `BodyTooLarge`, and the stream is cancelled
 * (the connection closed) without reading on. The bytes are counted as the
 * client hands them over, after any `content-encoding` is undone, so a small
 * compressed answer that inflates without end is stopped at the same place as
 * a long plain one (decision 0028). An uncompressed answer that announces more
 * is refused before a byte is read.
 */
export const readBounded = (
  response: HttpClientResponse.HttpClientResponse,
  maxBytes: number
): Effect.Effect<Uint8Array, BodyTooLarge | HttpClientError.HttpClientError> =>
  Effect.suspend(() => {
    const announced = Number(response.headers["content-length"])
    if (response.headers["content-encoding"] === undefined && announced > maxBytes) {
      return Effect.fail(new BodyTooLarge({ maxBytes }))
    }
    const chunks: Array<Uint8Array> = []
    let total = 0
    return response.stream.pipe(
      Stream.runForEachArray((arrived) => {
        for (const chunk of arrived) {
          total += chunk.byteLength
          if (total > maxBytes) return Effect.fail(new BodyTooLarge({ maxBytes }))
          chunks.push(chunk)
        }
        return Effect.void
      }),
      Effect.map(() => {
        const body = new Uint8Array(total)
        let at = 0
        for (const chunk of chunks) {
          body.set(chunk, at)
          at += chunk.byteLength
        }
        return body
      })
    )
  })
