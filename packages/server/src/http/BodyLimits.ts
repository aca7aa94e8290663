import { DataValidationError, Limits } from "@hearken/api/effect"

/**
 * How large and how elaborate a request body may be, derived from the field
 * limits (docs/api.md: "Limits"; docs/decisions/0029-request-bodies-and-sockets.md).
 */

/**
 * The most bytes one code point takes in a JSON string: an astral one (an
 * emoji) written as two `\uXXXX` escapes, as Python's `json.dumps` writes every
 * such character by default. Any JSON encoder may escape any character, so a
 * body written that way is as valid as one in raw UTF-8 (4 bytes at most).
 */
const maxBytesPerCodePoint = 12

/** The code points of the largest valid body, `POST /feedback` with every field at its limit. */
const codePoints = 2 * Limits.id + Limits.title + Limits.content +
  Limits.metadataProperties * (Limits.metadataKey + Limits.metadataValue) + Limits.token

/** Field names, quotes, colons, commas and braces around them. */
const skeletonBytes = JSON.stringify({ organizationId: "", boardId: "", title: "", content: "", metadata: {}, token: "" }).length +
  Limits.metadataProperties * `"":"",`.length

/** The largest valid body, every code point at its longest: 481,067 bytes. */
export const largestValidBodyBytes = skeletonBytes + codePoints * maxBytesPerCodePoint

/** Room for white space and unknown fields, which are ignored but not refused. */
const headroomBytes = 32 * 1024

const KiB = 1024

/** Request bodies over this are refused with 400 before or while they are read: 512 KiB. */
export const maxBodyBytes = Math.ceil((largestValidBodyBytes + headroomBytes) / (64 * KiB)) * 64 * KiB

export const tooLarge = new DataValidationError({ message: `body: larger than ${maxBodyBytes} bytes (${maxBodyBytes / KiB} KiB)` })

/**
 * A valid body is an object holding at most one object (`metadata`): two
 * levels and 26 values. The bounds leave room for unknown fields, and keep
 * small what `JSON.parse` and the decoder build: a body's cost then follows
 * its few values, not its bytes (`[[[…]]]`, `[[],[],…]` and thousands of
 * metadata keys cost the most per byte).
 */
export const maxDepth = 8
/** Object members and array elements, at any depth; the root is not counted. */
export const maxValues = 1_000

const tooDeep = new DataValidationError({ message: `body: nested deeper than ${maxDepth} levels` })
const tooMany = new DataValidationError({ message: `body: more than ${maxValues} values` })

const quote = 0x22
const backslash = 0x5c
const comma = 0x2c

/**
 * The refusal of a body nested deeper than `maxDepth` or holding more than
 * `maxValues` values, if any, from one pass over its bytes before it is
 * parsed. Structural characters are ASCII and never part of a UTF-8
 * multi-byte sequence, so the bytes need no decoding. Malformed JSON is left
 * to the parser, unless it trips a bound first.
 */
export const shapeError = (bytes: Uint8Array): DataValidationError | undefined => {
  let depth = 0
  let values = 0
  let inString = false
  // Just after `[` or `{`: the next significant byte starts the first value, unless it closes the container.
  let opened = false
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!
    if (inString) {
      if (byte === backslash) i++
      else if (byte === quote) inString = false
      continue
    }
    if (byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09) continue
    if (opened) {
      opened = false
      if (byte !== 0x5d && byte !== 0x7d && ++values > maxValues) return tooMany
    }
    if (byte === quote) inString = true
    else if (byte === comma) {
      if (++values > maxValues) return tooMany
    } else if (byte === 0x5b || byte === 0x7b) {
      if (++depth > maxDepth) return tooDeep
      opened = true
    } else if (byte === 0x5d || byte === 0x7d) depth--
  }
  return undefined
}
