/**
 * Every string the widget shows, in English, and the shape a translation
 * has. A translation is a module in `locales/` whose default export is a
 * complete `Messages`; `build.mjs` bundles each to `dist/locales/TAG.js`,
 * which the widget imports only when that language is used.
 *
 * A message is a string, or for a number a set of plural forms chosen by
 * `Intl.PluralRules` (`other` is required, as the fallback). `{name}` is
 * replaced by a value: `{count}`, `{seconds}` and `{title}`, where noted.
 * A plural message has exactly the categories `Intl.PluralRules` names for
 * its language (`test/widget-messages.test.ts`).
 */
export type Plural = { readonly other: string } & { readonly [Category in Intl.LDMLPluralRule]?: string }

export interface Messages {
  /** The tab with the form. */
  readonly tabPost: string
  /** The tab with the changelog. */
  readonly tabUpdates: string
  /** The accessible name of the tab list. */
  readonly tabs: string
  readonly formTitle: string
  /** The legend over the boards. */
  readonly board: string
  readonly loadingBoards: string
  readonly noBoards: string
  readonly boardsFailed: string
  readonly retry: string
  readonly title: string
  readonly details: string
  readonly submit: string
  readonly sending: string
  /** Over the similar posts; `{count}`. */
  readonly similar: Plural
  /** Read after a suggestion's title when it is a link. */
  readonly newTab: string
  /** `{title}`: the post's title. */
  readonly thanks: string
  readonly sendMore: string
  readonly pickBoard: string
  readonly titleRequired: string
  /** Under a title with nothing visible, where the API's English words are not shown (every language but English). */
  readonly fieldInvalid: string
  readonly loading: string
  readonly nothingNew: string
  readonly updatesFailed: string
  readonly unreachable: string
  /** 429 and 503; `{seconds}`. */
  readonly busy: Plural
  readonly unauthorized: string
  readonly notFound: string
  readonly checkForm: string
  readonly failed: string
  /** The floating button of `mode: "launcher"`, which opens the widget. */
  readonly launcher: string
  /** Under a field near its limit; `{count}`: how many characters may still be typed. */
  readonly charsLeft: Plural
  /** Under a field over its limit; `{count}`: the limit. */
  readonly tooLong: Plural
  /** The page's origin may not call the feedback service: for the visitor, who can do nothing about it. */
  readonly unavailable: string
  /** The link to the new post in the success message (with `postUrl`). */
  readonly viewPost: string
}

export const en: Messages = {
  tabPost: "Give feedback",
  tabUpdates: "What's new",
  tabs: "Feedback",
  formTitle: "Tell us what you need",
  board: "Board",
  loadingBoards: "Loading boards…",
  noBoards: "There is no public board yet.",
  boardsFailed: "Boards could not be loaded.",
  retry: "Try again",
  title: "Title",
  details: "Details (optional)",
  submit: "Send feedback",
  sending: "Sending…",
  similar: { one: "A similar post already exists", other: "{count} similar posts already exist" },
  newTab: "(opens in a new tab)",
  thanks: "Thank you! Your feedback “{title}” was posted.",
  sendMore: "Send more feedback",
  pickBoard: "Pick a board.",
  titleRequired: "Please give your feedback a title.",
  fieldInvalid: "Please check this field.",
  loading: "Loading…",
  nothingNew: "Nothing new yet.",
  updatesFailed: "Couldn't load what's new.",
  unreachable: "Can't reach the feedback service from this page.",
  busy: { one: "The feedback service is busy. Please try again in {seconds} second.", other: "The feedback service is busy. Please try again in {seconds} seconds." },
  unauthorized: "Your sign-in could not be verified. Reload the page and try again.",
  notFound: "This board no longer exists. Reload the page and pick another.",
  checkForm: "Please check the form.",
  failed: "Something went wrong on our side. Please try again.",
  launcher: "Feedback",
  charsLeft: { one: "{count} character left", other: "{count} characters left" },
  tooLong: { one: "At most {count} character.", other: "At most {count} characters." },
  unavailable: "Feedback isn't available on this page.",
  viewPost: "View your post"
}
