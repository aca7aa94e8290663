/**
 * The widget as a site owner sets it up (`HearkenWidget.init` options): the
 * visitor's language, the site's look, suggestions as links to posts, and
 * events for the host page. Debian's Chromium, against the real server
 * seeded with the demo fixture; the host page is on another origin, allowed
 * by `DASHBOARD_ORIGIN` (test/support/widget.ts). Screenshots go to
 * test-artifacts/widget-LOCALE-THEME.png and the like.
 */
import { mkdirSync, readFileSync } from "node:fs"
import type { Server } from "node:http"
import { join } from "node:path"
import type { Browser, Page, Request } from "playwright-core"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { catalogOf, shipped, translator } from "../packages/widget/src/i18n.ts"
import ar from "../packages/widget/src/locales/ar.ts"
import de from "../packages/widget/src/locales/de.ts"
import ja from "../packages/widget/src/locales/ja.ts"
import { en, type Messages } from "../packages/widget/src/messages.ts"
import { launchChromium } from "./support/browser.js"
import { widgetClient } from "./support/client.js"
import { faultyProxy, type FaultyProxy } from "./support/proxy.js"
import { startSeededServer, type TestServer } from "./support/server.js"
import { audit, hostPageServer } from "./support/widget.js"

const root = join(import.meta.dirname, "..")
const artifacts = join(root, "test-artifacts")
const demo = JSON.parse(readFileSync(join(root, "packages/server/fixtures/demo.json"), "utf8"))

let api: TestServer
let host: { server: Server; origin: string }
let browser: Browser

beforeAll(async () => {
  mkdirSync(artifacts, { recursive: true })
  let apiOrigin = ""
  host = await hostPageServer(() => apiOrigin)
  api = await startSeededServer(demo, { DASHBOARD_ORIGIN: host.origin })
  apiOrigin = api.origin
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  host?.server.close()
  await api?.close()
})

let page: Page
/** The widget's own files the page fetched (`/widget/…`), in order. */
let assets: Array<Request>

const newPage = async (contextOptions: Parameters<Browser["newContext"]>[0] = {}) => {
  await page?.context().close()
  // Dates are shown in the visitor's time zone: UTC here, so the demo's midnight-UTC dates stay on their day.
  const context = await browser.newContext({ viewport: { width: 720, height: 900 }, timezoneId: "UTC", ...contextOptions })
  page = await context.newPage()
  assets = []
  page.on("request", (request) => {
    if (new URL(request.url()).pathname.startsWith("/widget/")) assets.push(request)
  })
}

beforeEach(() => newPage())
afterEach(async () => {
  await page.context().close()
})

/** Opens the host page with `<html lang>` (none when ""), more init options (JavaScript source), host CSS, and the widget from `api`. */
const open = async (options: { lang?: string; init?: string; style?: string; api?: string } = {}) => {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(options)) params.set(name, value)
  assets = []
  await page.goto(`${host.origin}/?${params}`)
  await page.locator("#hearken .hk").waitFor()
  await page.getByRole("radio").first().waitFor()
}

const widget = () => page.locator("#hearken .hk")
const shot = (name: string) => widget().screenshot({ path: join(artifacts, `widget-${name}.png`) })
const localeFiles = () => assets.map((r) => new URL(r.url()).pathname).filter((path) => path.startsWith("/widget/locales/"))

/** Picks "Feature requests" (in any language: the first board) and types a draft; waits for its suggestions. */
const draft = async (title: string) => {
  await page.getByRole("radio").first().check()
  await widget().locator("input[name=title]").fill(title)
  await expect.poll(() => widget().locator(".similar li").count(), { timeout: 5_000 }).toBeGreaterThan(0)
}

/** What the API suggests for a draft on the features board. */
const suggestionsFor = async (title: string) =>
  (await widgetClient(api).suggest({ organizationId: "org_demo", boardId: "b_demo_features", title, content: "" }))
    .body as Array<{ id: string; slug: string; title: string }>

const tabNames = () => page.getByRole("tab").allTextContents()

/** WCAG 2 contrast of two `rgb(r, g, b)` colours. */
const contrastOf = (a: string, b: string) => {
  const luminance = (color: string) => {
    const [r, g, bl] = color.match(/\d+/g)!.map((v) => (Number(v) / 255) <= 0.04045 ? Number(v) / 255 / 12.92 : ((Number(v) / 255 + 0.055) / 1.055) ** 2.4)
    return 0.2126 * r! + 0.7152 * g! + 0.0722 * bl!
  }
  const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p)
  return (x! + 0.05) / (y! + 0.05)
}

const backgroundOf = () => widget().evaluate((el) => getComputedStyle(el).backgroundColor)

describe("the visitor's language", () => {
  it("comes from <html lang>: German messages, fetched once from /widget/locales/de.js, with German plurals and dates", async () => {
    await open({ lang: "de" })
    expect(await tabNames()).toEqual([de.tabPost, de.tabUpdates])
    expect(await widget().getAttribute("lang")).toBe("de")
    expect(await widget().getAttribute("dir")).toBe("ltr")
    // The first download and German; nothing else (no accent given).
    expect(assets.map((r) => new URL(r.url()).pathname)).toEqual(["/widget/widget.js", "/widget/locales/de.js"])
    expect((await assets.find((r) => r.url().endsWith("/locales/de.js"))!.response())!.status()).toBe(200)
    expect(await page.getByRole("button", { name: de.submit }).count()).toBe(1)

    const title = "Dark theme please"
    const expected = await suggestionsFor(title)
    expect(expected.length).toBeGreaterThan(1)
    await draft(title)
    expect(await widget().locator(".similar h3").textContent()).toBe(de.similar.other.replace("{count}", String(expected.length)))
    await shot("de-light")

    await page.getByRole("tab", { name: de.tabUpdates }).click()
    const dates = widget().locator(".updates time")
    await expect.poll(() => dates.allTextContents()).toEqual(["1. März 2026", "1. Februar 2026"])
    expect(localeFiles()).toEqual(["/widget/locales/de.js"])
  })

  it("comes from the browser's languages when the page has no lang: Japanese", async () => {
    await newPage({ locale: "ja-JP" })
    await open({ lang: "" })
    expect(await tabNames()).toEqual([ja.tabPost, ja.tabUpdates])
    expect(await widget().getAttribute("lang")).toBe("ja-JP")
    expect(localeFiles()).toEqual(["/widget/locales/ja.js"])
    await draft("Dark theme please")
    await shot("ja-light")
    await page.getByRole("tab", { name: ja.tabUpdates }).click()
    await expect.poll(() => widget().locator(".updates time").first().textContent()).toBe("2026年3月1日")
  })

  it("is English, with no language file fetched, for a language not shipped, and Traditional Chinese is not given Simplified", async () => {
    await newPage({ locale: "zh-TW" })
    await open({ lang: "sv" })
    expect(await tabNames()).toEqual([en.tabPost, en.tabUpdates])
    expect(await widget().getAttribute("lang")).toBe("en")
    expect(localeFiles()).toEqual([])
    await open({ lang: "zh-CN" })
    expect(await widget().getAttribute("lang")).toBe("zh-CN")
    expect(localeFiles()).toEqual(["/widget/locales/zh-Hans.js"])
  })

  it("is detected when `locale` is empty or null, as when it is absent", async () => {
    for (const locale of [`""`, "null", `"  "`]) {
      await open({ lang: "de", init: `{ locale: ${locale} }` })
      expect(await tabNames(), locale).toEqual([de.tabPost, de.tabUpdates])
    }
  })

  it("is the host's `locale` over <html lang>, and a regional tag keeps its region for dates", async () => {
    await open({ lang: "de", init: `{ locale: "fr-CA" }` })
    expect(await widget().getAttribute("lang")).toBe("fr-CA")
    expect(localeFiles()).toEqual(["/widget/locales/fr.js"])
    await page.getByRole("tab").nth(1).click()
    const expected = new Intl.DateTimeFormat("fr-CA", { dateStyle: "long" }).format(new Date("2026-03-01T00:00:00.000Z"))
    await expect.poll(() => widget().locator(".updates time").first().textContent()).toBe(expected)
  })

  it("is right to left in Hebrew too, and left to right in Japanese", async () => {
    for (const [lang, dir] of [["he", "rtl"], ["ja", "ltr"]]) {
      await open({ lang: lang! })
      expect(await widget().getAttribute("dir"), lang).toBe(dir)
      expect(await widget().evaluate((el) => getComputedStyle(el).direction), lang).toBe(dir)
    }
  })

  it("lays Arabic out right to left: tabs, spacing and arrow keys mirrored", async () => {
    await open({ lang: "ar" })
    expect(await widget().getAttribute("dir")).toBe("rtl")
    expect(await widget().getAttribute("lang")).toBe("ar")
    expect(await tabNames()).toEqual([ar.tabPost, ar.tabUpdates])
    const [first, second] = await Promise.all([0, 1].map((i) => page.getByRole("tab").nth(i).boundingBox()))
    // The first tab is on the right.
    expect(first!.x).toBeGreaterThan(second!.x)
    // The board chip's larger padding is on its end side: the left.
    const chip = await widget().locator(".board").first().evaluate((el) => {
      const style = getComputedStyle(el)
      return { left: style.paddingLeft, right: style.paddingRight, direction: style.direction }
    })
    expect(chip).toEqual({ left: "11.2px", right: "8px", direction: "rtl" })
    // The title's label text starts at the right edge of its field.
    const edges = await widget().locator("label[for$=-title]").evaluate((label) => {
      const range = document.createRange()
      range.selectNodeContents(label)
      const text = range.getBoundingClientRect()
      const input = label.nextElementSibling!.getBoundingClientRect()
      return { textRight: Math.round(text.right), inputRight: Math.round(input.right), textLeft: text.left, inputLeft: input.left }
    })
    expect(edges.textRight).toBe(edges.inputRight)
    expect(edges.textLeft).toBeGreaterThan(edges.inputLeft + 20)
    // ArrowLeft moves to the next tab, which is on the left.
    await page.getByRole("tab").first().focus()
    await page.keyboard.press("ArrowLeft")
    expect(await page.getByRole("tab", { name: ar.tabUpdates }).getAttribute("aria-selected")).toBe("true")
    await page.keyboard.press("ArrowRight")
    expect(await page.getByRole("tab", { name: ar.tabPost }).getAttribute("aria-selected")).toBe("true")
    await draft("Dark theme please")
    await shot("ar-light")
  })

  it("takes `messages` over any string, and a language not shipped when the host gives its messages", async () => {
    await open({ lang: "de", init: `{ messages: { submit: "Ab damit", similar: "Schon gefragt:", bogus: "x", title: 42 } }` })
    expect(await page.getByRole("button", { name: "Ab damit" }).count()).toBe(1)
    expect(await tabNames()).toEqual([de.tabPost, de.tabUpdates])
    // Not a message: ignored.
    expect(await widget().locator("label[for$=-title]").textContent()).toBe(de.title)
    await draft("Dark theme please")
    expect(await widget().locator(".similar h3").textContent()).toBe("Schon gefragt:")

    await open({ lang: "en", init: `{ locale: "uk", messages: { tabPost: "Залишити відгук", fieldInvalid: "Перевірте це поле.", similar: { one: "{count} схожий", few: "{count} схожі", many: "{count} схожих", other: "{count} схожого" } } }` })
    expect(await widget().getAttribute("lang")).toBe("uk")
    expect(localeFiles()).toEqual([])
    expect(await tabNames()).toEqual(["Залишити відгук", en.tabUpdates])
    await draft("Dark theme please")
    const count = (await suggestionsFor("Dark theme please")).length
    expect(await widget().locator(".similar h3").textContent()).toBe(`${count} схожі`)
    // The server's English field message is not shown in a Ukrainian widget: the host's own is.
    await widget().locator("input[name=title]").fill("\u200b\u200b\u200b")
    await widget().locator("button[type=submit]").click()
    await expect.poll(() => widget().locator("[id$=-title-error]").textContent()).toBe("Перевірте це поле.")

    // A plural with a form that is not a string is not a message.
    await open({ lang: "de", init: `{ messages: { similar: { one: 1, other: "x" } } }` })
    await draft("Dark theme please")
    expect(await widget().locator(".similar h3").textContent()).toBe(de.similar.other.replace("{count}", String(count)))
  })

  it("a language file that fails, never comes, or lacks a message: English where it must, and the widget renders", async () => {
    const proxy = await faultyProxy(api.origin)
    try {
      const german = readFileSync(join(root, "packages/widget/dist/locales/de.js"), "utf8")
      const withoutTitle = german.replace(/title:"[^"]*",/, "")
      expect(withoutTitle).not.toBe(german)
      const files: Record<string, (res: import("node:http").ServerResponse) => void> = {
        "/widget/locales/fr.js": (res) => void res.writeHead(404).end(),
        "/widget/locales/it.js": () => {}, // never answers
        "/widget/locales/de.js": (res) =>
          void res.writeHead(200, { "content-type": "text/javascript", "access-control-allow-origin": "*" }).end(withoutTitle)
      }
      proxy.override((request) => (request.url ?? "") in files, (request, response) => files[request.url!]!(response))
      const started = Date.now()
      for (const lang of ["fr", "it"]) {
        await open({ lang, init: `{}`, api: proxy.origin })
        expect(await tabNames(), lang).toEqual([en.tabPost, en.tabUpdates])
        expect(await widget().getAttribute("lang")).toBe("en")
      }
      // The stalled file was given up after 3 s.
      expect(Date.now() - started).toBeLessThan(8_000)
      await open({ lang: "de", api: proxy.origin })
      expect(await tabNames()).toEqual([de.tabPost, de.tabUpdates])
      expect(await widget().locator("label[for$=-title]").textContent()).toBe(en.title)
    } finally {
      await proxy.close()
    }
  })
})

describe("the site's look", () => {
  it("is light by default, dark on request, and `auto` follows prefers-color-scheme live, with no reload", async () => {
    await open()
    expect(await backgroundOf()).toBe("rgb(255, 255, 255)")
    await draft("Dark theme please")
    await shot("en-light")

    await open({ init: `{ theme: "dark" }` })
    expect(await backgroundOf()).toBe("rgb(22, 24, 31)")
    expect(await widget().evaluate((el) => getComputedStyle(el).colorScheme)).toBe("dark")
    await draft("Dark theme please")
    await shot("en-dark")

    await page.emulateMedia({ colorScheme: "light" })
    await open({ init: `{ theme: "auto" }` })
    expect(await backgroundOf()).toBe("rgb(255, 255, 255)")
    await page.evaluate(() => ((window as any).sameDocument = true))
    await page.emulateMedia({ colorScheme: "dark" })
    await expect.poll(backgroundOf).toBe("rgb(22, 24, 31)")
    await page.emulateMedia({ colorScheme: "light" })
    await expect.poll(backgroundOf).toBe("rgb(255, 255, 255)")
    expect(await page.evaluate(() => (window as any).sameDocument)).toBe(true)
    expect(await page.evaluate(() => (window as any).dispatched.filter((e: any) => e.type === "hearken:ready").length)).toBe(1)
  })

  it("takes an `accent` and keeps text on it and in it readable; the host sets any --hearken- colour in CSS", async () => {
    // A light yellow: white on it would fail, and as text on white it would be unreadable.
    await open({ init: `{ accent: "#ffd400" }`, style: "#hearken { --hearken-background: #fdf6e3; --hearken-radius: 2px }" })
    const colours = await widget().evaluate((el) => {
      const submit = getComputedStyle(el.querySelector("button[type=submit]")!)
      const tab = getComputedStyle(el.querySelector("[role=tab][aria-selected=true]")!)
      return { background: getComputedStyle(el).backgroundColor, radius: getComputedStyle(el).borderTopLeftRadius, button: submit.backgroundColor, onButton: submit.color, tab: tab.color }
    })
    // Its code came in its own module.
    expect(assets.map((r) => new URL(r.url()).pathname)).toEqual(["/widget/widget.js", "/widget/accent.js"])
    expect(colours.background).toBe("rgb(253, 246, 227)")
    expect(colours.radius).toBe("2px")
    expect(colours.button).toBe("rgb(255, 212, 0)")
    expect(colours.onButton).toBe("rgb(0, 0, 0)")
    // The selected tab's text: the accent darkened until it reads at 4.5:1 on the background.
    expect(colours.tab).not.toBe("rgb(255, 212, 0)")
    expect(contrastOf(colours.tab, colours.background)).toBeGreaterThanOrEqual(4.5)
    expect(contrastOf(colours.tab, colours.background)).toBeLessThan(6) // darkened only as far as needed
    await draft("Dark theme please")
    const result = await audit(page)
    expect(result.widget.violations).toEqual([])
    await shot("accent")

    // A dark blue on the dark theme: white text on it, and lightened where it is text.
    await open({ init: `{ accent: "#1e3a8a", theme: "dark" }` })
    const dark = await widget().evaluate((el) => ({
      button: getComputedStyle(el.querySelector("button[type=submit]")!).backgroundColor,
      onButton: getComputedStyle(el.querySelector("button[type=submit]")!).color,
      tab: getComputedStyle(el.querySelector("[role=tab][aria-selected=true]")!).color
    }))
    expect(dark.button).toBe("rgb(30, 58, 138)")
    expect(dark.onButton).toBe("rgb(255, 255, 255)")
    expect(dark.tab).not.toBe("rgb(30, 58, 138)")
    expect(contrastOf(dark.tab, "rgb(22, 24, 31)")).toBeGreaterThanOrEqual(4.5)
    await draft("Dark theme please")
    expect((await audit(page)).widget.violations).toEqual([])
    await shot("accent-dark")

    // What the canvas cannot resolve alone, or cannot show, is no accent: the defaults stay.
    for (const accent of ["var(--brand)", "transparent", "currentColor", "not a colour"]) {
      await open({ init: `{ accent: ${JSON.stringify(accent)} }`, style: "#hearken { --brand: #0f766e }" })
      expect(await widget().locator("button[type=submit]").evaluate((el) => getComputedStyle(el).backgroundColor), accent).toBe("rgb(67, 56, 202)")
    }
  })

  // Every language in light and dark; auto (seen dark) in four of them: en, de, ja and ar.
  const cases = ["en", ...shipped].flatMap((lang) =>
    ["light", "dark", ...["en", "de", "ja", "ar"].includes(lang) ? ["auto"] : []].map((theme) => [lang, theme] as const))
  it(`has no axe-core violations in any language × light, dark (and auto for en, de, ja, ar): ${cases.length} pages, form and changelog`, async () => {
    await page.emulateMedia({ colorScheme: "dark" })
    const results: Array<string> = []
    for (const [lang, theme] of cases) {
      await open({ lang, init: `{ theme: "${theme}" }` })
      const messages: Messages = lang === "en" ? en : (await import(`../packages/widget/src/locales/${lang}.ts`)).default
      expect(await tabNames()).toEqual([messages.tabPost, messages.tabUpdates])
      expect(await backgroundOf()).toBe(theme === "light" ? "rgb(255, 255, 255)" : "rgb(22, 24, 31)")
      await draft("Dark theme please")
      const form = await audit(page)
      if (theme !== "auto") await shot(`${lang}-${theme}`)
      await page.getByRole("tab").nth(1).click()
      await widget().locator(".updates h2").first().waitFor()
      const changelog = await audit(page)
      if (theme !== "auto" && ["de", "ar"].includes(lang)) await shot(`${lang}-${theme}-changelog`)
      for (const result of [form, changelog]) {
        expect(result.widget.passed, `${lang} ${theme}`).toBeGreaterThan(10)
        expect(result.widget.violations, `${lang} ${theme}`).toEqual([])
        expect(result.page.violations.filter((v) => /^(serious|critical) /.test(v)), `${lang} ${theme}`).toEqual([])
      }
      results.push(`${lang}/${theme}: ${form.widget.passed}+${changelog.widget.passed} rules passed`)
    }
    console.log(`axe-core, no violations: ${results.join("; ")}`)
  }, 180_000)
})

describe("suggestions as links to posts (`postUrl`)", () => {
  it("a template makes each suggestion a link that opens the post in a new tab", async () => {
    await open({ init: `{ postUrl: ${JSON.stringify(`${host.origin}/p/{slug}`)} }` })
    await draft("Dark theme please")
    const link = widget().locator(".similar a").first()
    expect(await link.getAttribute("href")).toBe(`${host.origin}/p/dark-mode`)
    expect(await link.getAttribute("target")).toBe("_blank")
    expect(await link.getAttribute("rel")).toBe("noopener")
    expect(await page.getByRole("link", { name: `Dark mode ${en.newTab}` }).count()).toBe(1)
    const [popup] = await Promise.all([page.context().waitForEvent("page"), link.click()])
    await popup.waitForLoadState()
    expect(popup.url()).toBe(`${host.origin}/p/dark-mode`)
    // The visitor stays on the host page, with the draft.
    expect(page.url()).toMatch(new RegExp(`^${host.origin}/\\?`))
    expect(await widget().locator("input[name=title]").inputValue()).toBe("Dark theme please")
    // A middle click opens it too, and counts as a selection; a right click does not.
    const selections = () => page.evaluate(() => (window as any).dispatched.filter((e: any) => e.type === "hearken:suggestion-selected").length)
    expect(await selections()).toBe(1)
    await Promise.all([page.context().waitForEvent("page"), link.click({ button: "middle" })])
    await link.click({ button: "right" })
    await page.keyboard.press("Escape")
    expect(await selections()).toBe(2)
  })

  it("a function of the suggestion, or a relative template against the page; anything but http(s) stays plain text", async () => {
    const cases: Array<[string, string | undefined]> = [
      [`(s) => "https://feedback.example.com/posts/" + s.id + "?from=widget"`, "https://feedback.example.com/posts/p_demo_dark_mode?from=widget"],
      [`(s) => new URL("/p/" + s.slug, "https://feedback.example.com")`, "https://feedback.example.com/p/dark-mode"],
      [`"/board/{slug}"`, `${host.origin}/board/dark-mode`],
      [`"javascript:alert({id})"`, undefined],
      [`"mailto:help@example.com?subject={slug}"`, undefined],
      [`() => { throw new Error("host bug") }`, undefined],
      [`() => undefined`, undefined],
      [`() => null`, undefined],
      [`() => ""`, undefined],
      [`() => false`, undefined],
      [`"https://feedback.example.com/p/{id}/{slug}"`, "https://feedback.example.com/p/p_demo_dark_mode/dark-mode"]
    ]
    for (const [postUrl, expected] of cases) {
      await open({ init: `{ postUrl: ${postUrl} }` })
      await draft("Dark theme please")
      const first = widget().locator(".similar li").first()
      expect(await first.locator("strong").textContent()).toBe("Dark mode")
      expect(await first.locator("a").count(), postUrl).toBe(expected === undefined ? 0 : 1)
      if (expected !== undefined) expect(await first.locator("a").getAttribute("href")).toBe(expected)
    }
  })
})

describe("events for the host page", () => {
  /** What the host element dispatched, checked equal to what `onEvent` received. */
  const events = async () => {
    const { dispatched, received } = await page.evaluate(() => ({ dispatched: (window as any).dispatched, received: (window as any).received }))
    expect(received).toEqual(dispatched)
    return dispatched as Array<{ type: string; detail: Record<string, unknown> }>
  }

  it("suggest → select: ready, the suggestions with their count, the post selected; no draft text", async () => {
    const title = "Dark theme please"
    const expected = await suggestionsFor(title)
    await open({ init: `{ postUrl: ${JSON.stringify(`${host.origin}/p/{slug}`)} }` })
    await draft(title)
    await widget().locator("textarea").fill("I work at night and my eyes hurt")
    const [popup] = await Promise.all([page.context().waitForEvent("page"), widget().locator(".similar a").first().click()])
    await popup.close()
    const seen = await events()
    expect(seen).toEqual([
      { type: "hearken:ready", detail: { locale: "en", dir: "ltr", theme: "light" } },
      {
        type: "hearken:suggestions",
        detail: { count: expected.length, boardId: "b_demo_features", posts: expected.map(({ id, slug }) => ({ id, slug })) }
      },
      { type: "hearken:suggestion-selected", detail: { id: "p_demo_dark_mode", slug: "dark-mode", url: `${host.origin}/p/dark-mode` } }
    ])
    expect(JSON.stringify(seen)).not.toMatch(/theme please|eyes/)
  })

  it("suggest → submit: ready, suggestions, submitted with the new post's id and slug", async () => {
    const title = `Dark theme for the reports ${Date.now()}`
    await open({ init: `{ theme: "dark", locale: "de" }` })
    await draft(title)
    await widget().locator("textarea").fill("My eyes hurt at night")
    await page.getByRole("button", { name: de.submit }).click()
    await expect.poll(async () => (await events()).length).toBe(3)
    const [post] = await api.db.query<{ id: string; slug: string }>((sql) => sql`SELECT id, slug FROM posts WHERE title = ${title}`)
    const seen = await events()
    expect(seen.map((e) => e.type)).toEqual(["hearken:ready", "hearken:suggestions", "hearken:submitted"])
    expect(seen[0]!.detail).toEqual({ locale: "de", dir: "ltr", theme: "dark" })
    expect(seen[1]!.detail["count"]).toBeGreaterThan(0)
    expect(seen[2]).toEqual({ type: "hearken:submitted", detail: { id: post!.id, slug: post!.slug, boardId: "b_demo_features" } })
    // The draft's words reach no event before it is a post; the post's slug is public.
    expect(JSON.stringify(seen.slice(0, 2))).not.toContain("reports")
    expect(JSON.stringify(seen)).not.toMatch(/eyes/i)
    expect(await page.getByRole("status").filter({ hasText: title }).textContent()).toBe(de.thanks.replace("{title}", title))
  })

  describe("with suggestions answered 1.5 s late", () => {
    let proxy: FaultyProxy
    beforeEach(async () => {
      proxy = await faultyProxy(api.origin)
      proxy.override((request) => request.method === "POST" && request.url === "/api/widget/v1/suggestions",
        (_request, _response, forward) => void setTimeout(forward, 1_500))
    })
    afterEach(() => proxy.close())

    it("destroy() while a suggestion is in flight: no event after it, and no request", async () => {
      await page.clock.install()
      await open({ api: proxy.origin })
      await page.getByRole("radio").first().check()
      await widget().locator("input[name=title]").fill("Dark theme please")
      await expect.poll(() => proxy.requests.filter((r) => r === "POST /api/widget/v1/suggestions").length, { timeout: 5_000 }).toBe(1)
      await page.evaluate(() => (window as any).hearken.destroy())
      expect(await page.locator("#hearken .hk").count()).toBe(0)
      await page.waitForTimeout(2_000) // the answer arrives
      await page.clock.fastForward(30_000) // past the scheduler's 12 s
      await page.waitForTimeout(300)
      expect(proxy.requests.filter((r) => r === "POST /api/widget/v1/suggestions")).toHaveLength(1)
      expect((await events()).map((e) => e.type)).toEqual(["hearken:ready"])
    })

    it("a post sent while its suggestions are in flight: their late answer is not shown on the next, empty form", async () => {
      const title = `Late suggestions ${Date.now()}`
      await open({ api: proxy.origin })
      await page.getByRole("radio").first().check()
      await widget().locator("input[name=title]").fill(title)
      await expect.poll(() => proxy.requests.filter((r) => r === "POST /api/widget/v1/suggestions").length, { timeout: 5_000 }).toBe(1)
      await page.getByRole("button", { name: en.submit }).click()
      await expect.poll(() => page.getByRole("status").filter({ hasText: title }).count()).toBe(1)
      await page.waitForTimeout(2_000) // the answer arrives
      await page.getByRole("button", { name: en.sendMore }).click()
      expect(await widget().locator(".similar").textContent()).toBe("")
      expect((await events()).map((e) => e.type)).toEqual(["hearken:ready", "hearken:submitted"])
    })
  })

  it("init on a target that has a widget replaces it: one widget, one set of events", async () => {
    await open()
    await page.evaluate(() => {
      const again = (window as any).HearkenWidget.init({ organizationId: "org_demo", target: "#hearken" })
      ;(window as any).HearkenWidget.init({ organizationId: "org_demo", target: "#hearken" })
      return again
    })
    await page.waitForTimeout(500)
    expect(await page.locator("#hearken .hk").count()).toBe(1)
    // The page's own widget was replaced: its handle is a no-op now, and it sent nothing more.
    await page.evaluate(() => (window as any).hearken.destroy())
    expect(await page.locator("#hearken .hk").count()).toBe(1)
    expect(await page.getByRole("radio").count()).toBe(2)
  })

  it("a failed call: hearken:error with its _tag and operation, and a host listener that throws breaks nothing", async () => {
    // An API that refuses this origin (no DASHBOARD_ORIGIN): CORS, a NetworkError to the page.
    const closed = await startSeededServer(demo, {})
    try {
      await page.goto(`${host.origin}/?${new URLSearchParams({ api: closed.origin, init: `{ onEvent: () => { throw new Error("host bug") } }` })}`)
      await expect.poll(() => page.evaluate(() => (window as any).dispatched.length)).toBe(2)
      expect(await page.evaluate(() => (window as any).dispatched)).toEqual([
        { type: "hearken:ready", detail: { locale: "en", dir: "ltr", theme: "light" } },
        { type: "hearken:error", detail: { _tag: "NetworkError", operation: "boards" } }
      ])
      expect(await page.getByRole("alert").textContent()).toBe(en.unavailable)
    } finally {
      await page.context().close()
      await closed.close()
    }
  })
})

describe("GET /widget/locales/TAG.js and /widget/accent.js", () => {
  it("serves each as a module any page may import, cached like widget.js; an unknown one is a JSON 404", async () => {
    const res = await fetch(`${api.origin}/widget/locales/de.js`, { headers: { origin: "https://elsewhere.example", "accept-encoding": "gzip" } })
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toBe("text/javascript; charset=utf-8")
    expect(res.headers.get("cache-control")).toBe("public, max-age=300")
    expect(res.headers.get("access-control-allow-origin")).toBe("*")
    expect(await res.text()).toBe(readFileSync(join(root, "packages/widget/dist/locales/de.js"), "utf8"))
    const accent = await fetch(`${api.origin}/widget/accent.js`)
    expect([accent.status, accent.headers.get("content-type"), accent.headers.get("access-control-allow-origin")])
      .toEqual([200, "text/javascript; charset=utf-8", "*"])
    expect(await accent.text()).toBe(readFileSync(join(root, "packages/widget/dist/accent.js"), "utf8"))
    const missing = await fetch(`${api.origin}/widget/locales/xx.js`)
    expect(missing.status).toBe(404)
    expect((await missing.json())._tag).toBe("NotFoundError")
  })
})

describe("choosing and formatting messages (i18n.ts)", () => {
  it("matches shipped languages by language, Chinese by script and Portuguese by region", () => {
    const of = (tag: string) => catalogOf(new Intl.Locale(tag))
    expect(["de-CH", "pt-BR", "pt-PT", "en-GB", "ar-EG", "he-IL", "iw", "zh", "zh-CN", "zh-Hans-HK", "zh-TW", "zh-HK", "zh-Hant", "uk", "nb"].map(of))
      .toEqual(["de", "pt", "pt-PT", "en", "ar", "he", "he", "zh-Hans", "zh-Hans", "zh-Hans", undefined, undefined, undefined, undefined, undefined])
  })

  it("picks each plural form the locale's rules name, and formats the number in it", () => {
    const similar = (messages: Messages, tag: string, count: number) => translator(messages, tag)("similar", { count })
    expect([1, 2, 5].map((n) => similar(en, "en", n))).toEqual([en.similar.one, "2 similar posts already exist", "5 similar posts already exist"])
    const forms = [0, 1, 2, 3, 11, 100].map((n) => similar(ar, "ar", n))
    expect(forms).toEqual([ar.similar.zero, ar.similar.one, ar.similar.two, ar.similar.few, ar.similar.many, ar.similar.other]
      .map((form, i) => form!.replace("{count}", new Intl.NumberFormat("ar").format([0, 1, 2, 3, 11, 100][i]!))))
    expect(translator(en, "de")("busy", { seconds: 1234 })).toBe("The feedback service is busy. Please try again in 1.234 seconds.")
    expect(translator(en, "en")("thanks", { title: "{count} <b>" })).toBe("Thank you! Your feedback “{count} <b>” was posted.")
  })
})
