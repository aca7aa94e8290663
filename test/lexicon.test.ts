import { describe, expect, it } from "vitest"
import { fold, lexicon, maxBodyWords, queryFeatures } from "../packages/server/src/lexicon/lexicon.js"

const has = (title: string, body = "") => {
  const lex = lexicon(title, body)
  return new Set([...lex.title, ...lex.body])
}

describe("the lexicon (suggestion features)", () => {
  it("folds case, width and diacritics", () => {
    expect(fold("Crème BRÛLÉE Ｆｕｌｌ Übersicht")).toBe("creme brulee full ubersicht")
  })

  it("shares a prefix feature across word forms", () => {
    for (const word of ["export", "exporting", "exported", "exports"]) expect(has(word)).toContain("p:expor")
    expect(has("notify")).toContain("p:notif")
    expect(has("notifications")).toContain("p:notif")
  })

  it("gives initialisms of word windows and short words alike", () => {
    expect(has("Single sign-on with Okta")).toContain("i:sso")
    expect(has("Support SSO")).toContain("i:sso")
    expect(has("user interface")).toContain("i:ui")
  })

  it("gives title trigrams that a compound and its parts share", () => {
    const compound = has("Dunkelmodus")
    const parts = has("dunkler Modus")
    const shared = [...compound].filter((f) => f.startsWith("t:") && parts.has(f))
    expect(shared).toEqual(expect.arrayContaining(["t:#du", "t:dun", "t:mod", "t:odu", "t:dus", "t:us#"]))
  })

  it("splits Chinese and Japanese into character bigrams", () => {
    expect(has("支持导出为Excel")).toEqual(new Set([
      "w:excel", "i:excel", "t:#ex", "t:exc", "t:xce", "t:cel", "t:el#",
      "c:支持", "c:持导", "c:导出", "c:出为"
    ]))
    expect(has("ダークモードが欲しい")).toEqual(new Set(["c:ダー", "c:ーク", "c:クモ", "c:モー", "c:ード", "c:ドが", "c:が欲", "c:欲し", "c:しい"]))
  })

  it("skips tokens no word is as long as, which PostgreSQL could not store", () => {
    const features = queryFeatures("a".repeat(200), `${"b".repeat(20_000)} export`)
    expect(features.every(({ feature }) => feature.length <= 60)).toBe(true)
    expect(features.map((f) => f.feature)).toContain("w:export")
  })

  it("reads a body only so far, and counts body features half", () => {
    const body = Array.from({ length: maxBodyWords + 50 }, (_, i) => `word${i}`).join(" ")
    const lex = lexicon("Title", body)
    expect(lex.body).toContain(`w:word${maxBodyWords - 1}`)
    expect(lex.body).not.toContain(`w:word${maxBodyWords}`)
    const weights = new Map(queryFeatures("Dark mode", "dark theme").map((f) => [f.feature, f.weight]))
    expect(weights.get("w:dark")).toBe(1)
    expect(weights.get("w:theme")).toBe(0.5)
  })

  it("never cuts a character in half, and keeps combining marks inside words", () => {
    // Adlam letters lie outside the Basic Multilingual Plane: two UTF-16 units each.
    const adlam = has("𞤀𞤁𞤂")
    expect(adlam).toContain("w:𞤢𞤣𞤤")
    expect(adlam).toContain("t:#𞤢𞤣")
    for (const feature of adlam) expect(feature).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/)
    // A lone surrogate (half a character) becomes U+FFFD and breaks nothing.
    expect(has("bad \ud83a half")).toEqual(has("bad \ufffd half"))
    // Devanagari vowel signs are marks: the word stays whole.
    expect(has("हिन्दी में खोज")).toContain("w:हिन्दी")
  })

  it("splits Thai, written without spaces, into character pairs", () => {
    expect([...has("ค้นหาไม่เจอ")].every((f) => f.startsWith("c:"))).toBe(true)
    expect(has("ค้นหาไม่เจอ")).toContain("c:หา")
  })
})
