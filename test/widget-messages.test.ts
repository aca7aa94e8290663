/**
 * The widget's translations (`packages/widget/src/locales/`), every file
 * there, found by listing the directory: each has every message English has
 * and no other, none empty; each plural message has exactly the categories
 * `Intl.PluralRules` names for its language; each keeps the `{values}`
 * English has; its tab labels fit side by side in a narrow widget; and
 * `i18n.ts` ships exactly these files and picks them for their tags.
 * Plain node, no browser.
 */
import { readdirSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { catalogOf, shipped } from "../packages/widget/src/i18n.ts"
import { en, type Messages, type Plural } from "../packages/widget/src/messages.ts"

const directory = join(import.meta.dirname, "../packages/widget/src/locales")
const tags = readdirSync(directory).filter((file) => file.endsWith(".ts")).map((file) => file.slice(0, -".ts".length)).sort()
const translations: ReadonlyArray<readonly [string, Messages]> = await Promise.all(tags.map(async (tag) =>
  [tag, (await import(`../packages/widget/src/locales/${tag}.ts`) as { readonly default: Messages }).default] as const))

const keys = Object.keys(en) as ReadonlyArray<keyof Messages>
const isPlural = (message: string | Plural): message is Plural => typeof message !== "string"
const categories = (tag: string) => [...new Intl.PluralRules(tag).resolvedOptions().pluralCategories].sort()
/** The `{names}` in a message, sorted, each once. */
const placeholders = (text: string) => [...new Set([...text.matchAll(/\{(\w+)\}/g)].map((match) => match[1]))].sort()

describe("the widget's translations", () => {
  it("are a file for each shipped language, the new ones among them", () => {
    expect(tags).toEqual([...shipped].sort())
    expect(tags).toEqual(expect.arrayContaining(["ko", "ru", "pl", "tr", "pt-PT", "pt", "de", "ar", "zh-Hans"]))
    expect(translations.map(([tag]) => tag)).toEqual(tags)
  })

  it("English's plural messages have exactly English's categories", () => {
    for (const key of keys) {
      const message = en[key]
      if (isPlural(message)) expect(Object.keys(message).sort(), key).toEqual(categories("en"))
    }
    expect(categories("en")).toEqual(["one", "other"])
    expect(keys.filter((key) => isPlural(en[key]))).toEqual(["similar", "busy", "charsLeft", "tooLong"])
  })

  describe.each(translations)("%s", (tag, messages) => {
    it("has every message English has, and no other, none empty", () => {
      expect(Object.keys(messages).sort()).toEqual([...keys].sort())
      for (const key of keys) {
        const message = messages[key]
        const english = en[key]
        expect(typeof message, key).toBe(typeof english)
        const forms = isPlural(message) ? Object.values(message) : [message]
        for (const form of forms) {
          expect(typeof form, key).toBe("string")
          expect(form.trim(), key).not.toBe("")
        }
      }
    })

    it("has exactly its language's plural categories in each plural message", () => {
      const expected = categories(tag)
      expect(expected).toContain("other")
      for (const key of keys) {
        const message = messages[key]
        if (isPlural(message)) expect(Object.keys(message).sort(), `${tag} ${key}`).toEqual(expected)
      }
    })

    it("keeps English's {values}: all of them in a message and in a plural's other form, and none English lacks", () => {
      for (const key of keys) {
        const message = messages[key]
        const english = en[key]
        if (isPlural(message) && isPlural(english)) {
          const names = placeholders(english.other)
          expect(placeholders(message.other), `${tag} ${key}.other`).toEqual(names)
          for (const [category, form] of Object.entries(message)) {
            for (const name of placeholders(form)) expect(names, `${tag} ${key}.${category}`).toContain(name)
          }
        } else if (!isPlural(message) && !isPlural(english)) {
          expect(placeholders(message), `${tag} ${key}`).toEqual(placeholders(english))
        }
      }
    })

    it("has tab labels that fit two side by side at 360 px", () => {
      const wide = /^(ja|ko|zh)\b/.test(tag)
      for (const key of ["tabPost", "tabUpdates"] as const) {
        expect([...messages[key]].length, `${tag} ${key}: ${messages[key]}`).toBeLessThanOrEqual(wide ? 8 : 18)
      }
    })

    it("is the catalogue i18n.ts picks for its own tag", () => {
      expect(catalogOf(new Intl.Locale(tag))).toBe(tag)
    })
  })

  it("i18n.ts picks Portugal's Portuguese by region, Brazil's otherwise, and the new languages by language", () => {
    const of = (tag: string) => catalogOf(new Intl.Locale(tag))
    expect(["pt-PT", "pt-AO", "pt-MZ", "pt-CV", "pt-GW", "pt-ST", "pt-TL", "pt-MO", "pt-Latn-PT"].map(of))
      .toEqual(["pt-PT", "pt-PT", "pt-PT", "pt-PT", "pt-PT", "pt-PT", "pt-PT", "pt-PT", "pt-PT"])
    expect(["pt", "pt-BR", "pt-US", "pt-Latn"].map(of)).toEqual(["pt", "pt", "pt", "pt"])
    expect(["ru-RU", "ru", "pl-PL", "ko-KR", "tr-TR", "uk", "sv"].map(of)).toEqual(["ru", "ru", "pl", "ko", "tr", undefined, undefined])
  })
})
