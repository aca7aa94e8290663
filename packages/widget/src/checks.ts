/**
 * The widget's own checks of a draft, before it is sent: against the API's
 * limits table (`Limits`, in code points, as the API counts) and its rule for
 * titles (`visibleCharacter`), so that every field error the visitor sees comes
 * from here, in the visitor's language, and the server is asked only about a
 * draft it would take. A `DataValidationError` the server answers anyway is a
 * general error (`describe`): its message is never parsed for a field.
 */
import { Limits, visibleCharacter, visibleTitleExpected, type ClientError, type EndpointId, type Payload } from "@hearken/api/thin"
import type { Translate } from "./i18n.js"
import { codePoints } from "./links.js"

export type Draft = Payload<"suggestions">

/** The fields the widget marks: the board, the title and the details. */
export type Field = "boardId" | "title" | "content"

export const limited = ["title", "content"] as const

/** The first field over its limit, if any. */
export const overLimit = (draft: Draft) => limited.find((name) => codePoints(draft[name]) > Limits[name])

/**
 * The first field the API would refuse, and what to say under it; undefined
 * when the draft may be sent. In the order the widget always checked them:
 * the board, an empty title, the limits, then a title with nothing visible,
 * whose words are the API's own in English (`english`) and "check this field"
 * in any other language.
 */
export const check = (draft: Draft, t: Translate, english: boolean): [Field, string] | undefined => {
  if (draft.boardId === "") return ["boardId", t("pickBoard")]
  if (draft.title === "") return ["title", t("titleRequired")]
  const over = overLimit(draft)
  if (over !== undefined) return [over, t("tooLong", { count: Limits[over] })]
  if (!visibleCharacter.test(draft.title)) return ["title", english ? `Expected ${visibleTitleExpected}` : t("fieldInvalid")]
  return undefined
}

/**
 * A readable sentence for an error that is not about one field. The server
 * writes its messages in English: shown as they are only in an English widget.
 */
export const describe = (error: ClientError<EndpointId>, t: Translate, english: boolean): string => {
  switch (error._tag) {
    case "NetworkError":
      return t("unreachable")
    case "RateLimitExceededError":
    case "RateLimitUnavailableError":
      return t("busy", { seconds: error.retryAfterSeconds })
    case "UnauthorizedError":
      return t("unauthorized")
    case "NotFoundError":
      return t("notFound")
    case "DataValidationError":
      return english && error.message ? error.message : t("checkForm")
    default:
      return t("failed")
  }
}
