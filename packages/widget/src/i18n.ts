/**
 * The widget's language: which one a visitor gets, loading its messages, and
 * formatting them (plural forms, numbers, dates) in that locale.
 */
import { en, type Messages, type Plural } from "./messages.js"
import { importSibling } from "./sibling.js"

/** The translations shipped besides English, each built to `locales/TAG.js` next to `widget.js`. */
export const shipped = ["de", "fr", "es", "pt", "pt-PT", "it", "nl", "pl", "ru", "tr", "ja", "ko", "zh-Hans", "ar", "he"] as const
export type Shipped = typeof shipped[number] | "en"

/** Any message replaced by the host, in any language; a plural message may be a plain string. */
export type MessageOverrides = { readonly [K in keyof Messages]?: Messages[K] | string }

/** Languages written right to left. */
const rtl = /^(ar|he|fa|ur|ps|sd|ug|yi|dv|ckb|syr)$/

const localeOf = (tag: string | undefined): Intl.Locale | undefined => {
  try {
    return tag ? new Intl.Locale(tag) : undefined
  } catch {
    return undefined // not a BCP 47 tag
  }
}

/**
 * The shipped messages for a locale: by language; for Chinese by script
 * (Simplified only); for Portuguese by region: Portugal's where CLDR's
 * `pt_PT` is the parent locale (Portugal, Lusophone Africa, East Timor,
 * Macau, Switzerland, Luxembourg), else Brazil's, as for no region.
 */
export const catalogOf = (locale: Intl.Locale): Shipped | undefined => {
  const language = locale.language
  if (language === "zh") return locale.maximize().script === "Hans" ? "zh-Hans" : undefined
  if (language === "pt") return /^(PT|AO|CH|CV|GQ|GW|LU|MO|MZ|ST|TL)$/.test(locale.region ?? "") ? "pt-PT" : "pt"
  return language === "en" || (shipped as ReadonlyArray<string>).includes(language) ? language as Shipped : undefined
}

export interface Language {
  /** The visitor's locale, canonical (`de-CH`): for `lang`, dates, numbers and plurals. */
  readonly tag: string
  readonly catalog: Shipped
  readonly dir: "ltr" | "rtl"
}

const language = (locale: Intl.Locale, catalog: Shipped): Language => ({
  tag: locale.toString(),
  catalog,
  dir: rtl.test(locale.language) ? "rtl" : "ltr"
})

/**
 * The host's `locale` if we ship its language; else, when the host gives
 * `messages` for it, that locale over English; else English. Without a
 * `locale`: the first of the page's `<html lang>` and the browser's
 * languages that we ship, else English. (In the frame, `pageLang` is the
 * host page's, which `embed.js` sends.)
 */
export const resolve = (locale: string | undefined, overridden: boolean, pageLang = document.documentElement.lang): Language => {
  // An empty or absent `locale` (a CMS field left blank) means "not given".
  const requested = typeof locale === "string" && locale.trim() !== "" ? locale.trim() : undefined
  const candidates = requested === undefined ? [pageLang, ...navigator.languages] : [requested]
  for (const tag of candidates) {
    const parsed = localeOf(tag)
    const catalog = parsed && catalogOf(parsed)
    if (catalog) return language(parsed, catalog)
  }
  const host = localeOf(requested)
  return host && overridden ? language(host, "en") : language(new Intl.Locale("en"), "en")
}

/** The shipped messages, fetched when first used; undefined if the file cannot be loaded. */
export const load = async (catalog: Shipped): Promise<Messages | undefined> =>
  catalog === "en" ? en : (await importSibling<{ readonly default: Messages }>(`locales/${catalog}.js`))?.default

/** A string, or plural forms that are all strings, `other` among them. */
const valid = (value: unknown) =>
  typeof value === "string" || (typeof value === "object" && value !== null && typeof (value as Plural).other === "string" &&
    Object.values(value).every((form) => typeof form === "string"))

/**
 * `base` with `overrides` over it, key by key; anything that is not one of
 * its messages is ignored. Used for a language file over English (a file from
 * another deploy may lack a key) and for the host's `messages` over that.
 */
export const merge = (base: Messages, overrides: MessageOverrides | undefined): Messages => {
  const messages: Record<string, unknown> = { ...base }
  for (const [key, value] of Object.entries(overrides ?? {})) if (Object.hasOwn(base, key) && valid(value)) messages[key] = value
  return messages as unknown as Messages
}

/** `t("thanks", { title })`, `t("similar", { count: 2 })`: the message with its `{values}`, in the plural form `count` or `seconds` needs. */
export const translator = (messages: Messages, tag: string) => {
  const plurals = new Intl.PluralRules(tag)
  const numbers = new Intl.NumberFormat(tag)
  return (key: keyof Messages, values: Record<string, string | number> = {}): string => {
    const message: string | Plural = messages[key]
    const n = values["count"] ?? values["seconds"]
    const text = typeof message === "string" ? message
      : message[plurals.select(typeof n === "number" ? n : 0)] ?? message.other
    return text.replace(/\{(\w+)\}/g, (whole, name: string) => {
      const value = values[name]
      return value === undefined ? whole : typeof value === "number" ? numbers.format(value) : value
    })
  }
}
export type Translate = ReturnType<typeof translator>
