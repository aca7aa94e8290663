/**
 * The widget on any site (decision 0032): a shop at
 * `http://www.shop-example.test:PORT`, an origin the API's CORS refuses,
 * embeds it with the two lines of `embed.js`, which frames `/widget/frame`
 * from the API's own origin. Real Chromium, real server, real PostgreSQL; no
 * request interception (decision 0015): `*.test` resolves to loopback through
 * Chromium's resolver rules (`support/browser.ts`). Also the launcher, in the
 * frame and in the page, limits checked before any request, links, and the
 * frame's Content-Security-Policy. Screenshots go to
 * test-artifacts/widget-frame-*.png.
 */
import { execFileSync } from "node:child_process"
import { mkdirSync, readFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { join } from "node:path"
import { SignJWT } from "jose"
import type { Browser, Frame, Page, Request } from "playwright-core"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest"
import ar from "../packages/widget/src/locales/ar.ts"
import deMessages from "../packages/widget/src/locales/de.ts"
import { en } from "../packages/widget/src/messages.ts"
import { merge, translator } from "../packages/widget/src/i18n.ts"
import { eventTypes } from "../packages/widget/src/options.ts"
import { launchChromium } from "./support/browser.js"
import { listenOnLoopback } from "./support/net.js"
import { startSeededServer, type TestServer } from "./support/server.js"
import { hostPageServer } from "./support/widget.js"

const root = join(import.meta.dirname, "..")
const artifacts = join(root, "test-artifacts")
const demo = JSON.parse(readFileSync(join(root, "packages/server/fixtures/demo.json"), "utf8"))
const axeSource = readFileSync(join(root, "node_modules/axe-core/axe.min.js"), "utf8")

/** The shop's page: `embed.js` from the API, `init` with the options given as JavaScript source, every event recorded. */
const shopPage = (api: string, url: URL) => {
  const lang = url.searchParams.get("lang") ?? "en"
  const init = url.searchParams.get("init") ?? "{}"
  const record = `window.dispatched = []; window.received = []
for (const type of ${JSON.stringify(eventTypes)}) document.querySelector("#hearken").addEventListener(type, (e) => window.dispatched.push({ type: e.type, detail: e.detail }))`
  const mode = url.searchParams.get("mode")
  const body = url.pathname === "/two-lines"
    ? `<div id="hearken"></div>
<script src="${api}/widget/embed.js" data-organization-id="org_demo" data-target="#hearken"${mode === null ? "" : ` data-mode="${mode}"`}></script>
<script>${record}</script>`
    : `<div id="hearken"></div>
<script src="${api}/widget/embed.js"></script>
<script>${record}
window.hearken = HearkenWidget.init({ organizationId: "org_demo", target: "#hearken", onEvent: (e) => window.received.push(e), ...(${init}) })</script>`
  const evil = url.searchParams.has("evil") ? `<iframe title="ad" src="http://evil.test:${url.searchParams.get("evil")}/evil" style="width:10px;height:10px"></iframe>` : ""
  return `<!doctype html><html lang="${lang}"><head><meta charset="utf-8"><title>Shop</title>
<style>body { font: 18px Georgia, serif; color: #800000; background: #f3f0e8 } h1 { margin: 0 0 1rem }</style></head>
<body><main><h1>A shop on its own domain</h1><a href="#before">Before</a>
${body}
<p><a href="#after">After</a></p>${evil}</main></body></html>`
}

/**
 * Another site's frame on the shop's page: it sends the widget's own
 * messages to the shop (a forged event, a height) and to every frame of the
 * shop (a token, an init), again and again.
 */
const evilPage = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>ad</title></head><body><script>
const forge = () => {
  parent.postMessage({ hearken: "event", type: "hearken:submitted", detail: { id: "p_forged", slug: "forged", boardId: "b_demo_features" } }, "*")
  parent.postMessage({ hearken: "height", height: 7 }, "*")
  parent.postMessage({ hearken: "ready", label: "Forged", dir: "rtl" }, "*")
  for (let i = 0; i < parent.frames.length; i++) {
    parent.frames[i].postMessage({ hearken: "token", token: "forged.token.value" }, "*")
    parent.frames[i].postMessage({ hearken: "init", options: { organizationId: "org_forged", linkBase: "http://evil.test/" } }, "*")
  }
}
forge(); setInterval(forge, 100)
</script></body></html>`

/** A 16 × 9 PNG: a changelog cover. */
const cover = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAABAAAAAJCAIAAAC0SDtlAAAAFElEQVR4nGNwtjhFEmIY1TAoNAAANSS20ZdI6OcAAAAASUVORK5CYII=",
  "base64"
)

let api: TestServer
let shop: { server: Server; port: number; origin: string }
/** widget.js on an allowed origin (a subdomain of ROOT_DOMAIN), for the launcher in the page. */
let allowed: { server: Server; origin: string }
let browser: Browser
let page: Page
let sent: Array<Request>

beforeAll(async () => {
  execFileSync(process.execPath, [join(root, "packages/widget/build.mjs")], { stdio: "inherit" })
  mkdirSync(artifacts, { recursive: true })
  let apiOrigin = ""
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x")
    if (url.pathname === "/cover.png") return void res.writeHead(200, { "content-type": "image/png" }).end(cover)
    // `?csp`: the policy docs/widget.md gives a site with a CSP of its own (and inline scripts, for this page's recorder).
    const csp = url.searchParams.has("csp") ? { "content-security-policy": `default-src 'self'; frame-src ${apiOrigin}; script-src ${apiOrigin} 'unsafe-inline'` } : {}
    res.writeHead(200, { "content-type": "text/html; charset=utf-8", ...csp })
    res.end(url.pathname === "/evil" ? evilPage : shopPage(apiOrigin, url))
  })
  const port = await listenOnLoopback(server)
  shop = { server, port, origin: `http://www.shop-example.test:${port}` }
  const inPage = await hostPageServer(() => apiOrigin)
  allowed = { server: inPage.server, origin: inPage.origin.replace("127.0.0.1", "shop.localhost") }
  // No DASHBOARD_ORIGIN: the shop's origin is allowed by nothing; http subdomains of localhost are (PUBLIC_URL is http).
  api = await startSeededServer(demo, { ROOT_DOMAIN: "localhost" })
  apiOrigin = api.origin
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  shop?.server.close()
  allowed?.server.close()
  await api?.close()
})

/** A fresh page recording the API requests of the page and its frames; `bypassCSP` lets axe be injected into the frame. */
const newPage = async (options: { bypassCSP?: boolean } = {}) => {
  await page?.context().close()
  const context = await browser.newContext({ viewport: { width: 720, height: 900 }, ...options })
  page = await context.newPage()
  sent = []
  page.on("request", (request) => {
    if (new URL(request.url()).pathname.startsWith("/api/widget/v1/")) sent.push(request)
  })
}

beforeEach(() => newPage())

afterEach(async () => {
  await page.context().close()
})

const requestsTo = (path: string) => sent.filter((r) => new URL(r.url()).pathname === `/api/widget/v1/${path}`)

/** The shop's page with these `init` options (JavaScript source), and the widget's frame once it shows its boards. */
const openShop = async (init = "{}", query: Record<string, string> = {}): Promise<Frame> => {
  const search = new URLSearchParams({ init, ...query })
  await page.goto(`${shop.origin}/?${search}`)
  return widgetFrame()
}

const widgetFrame = async (): Promise<Frame> => {
  await expect.poll(() => page.frames().some((f) => f.url().startsWith(`${api.origin}/widget/frame`)), { timeout: 10_000 }).toBe(true)
  return page.frames().find((f) => f.url().startsWith(`${api.origin}/widget/frame`))!
}

const boardsShown = async (frame: Frame) =>
  expect.poll(() => frame.getByRole("radio").count(), { timeout: 10_000 }).toBeGreaterThan(0)

const events = () => page.evaluate(() => ({ dispatched: (window as any).dispatched, received: (window as any).received }))

const shot = (name: string, target: "page" | "#hearken" = "#hearken") =>
  target === "page"
    ? page.screenshot({ path: join(artifacts, `widget-frame-${name}.png`) })
    : page.locator(target).screenshot({ path: join(artifacts, `widget-frame-${name}.png`) })

/** The element focused in the frame, looking into its shadow root. */
const focusedIn = (frame: Frame) =>
  frame.evaluate(() => {
    let el = document.activeElement
    while (el?.shadowRoot?.activeElement) el = el.shadowRoot.activeElement
    return el === null || el === document.body ? null : `${el.tagName.toLowerCase()} ${el.getAttribute("role") ?? ""} ${el.textContent ?? ""}`.trim()
  })

/** The element focused in the shop's page, looking into shadow roots (the launcher's button). */
const focusedInPage = () =>
  page.evaluate(() => {
    let el = document.activeElement
    while (el?.shadowRoot?.activeElement) el = el.shadowRoot.activeElement
    return el === null ? null : `${el.tagName.toLowerCase()} ${el.textContent ?? ""}`.trim()
  })

describe("embed.js on a site CORS refuses", () => {
  it("the shop's own calls to the API are refused: widget.js could not work there", async () => {
    await page.goto(`${shop.origin}/?init=${encodeURIComponent("{}")}`)
    const direct = await page.evaluate(async (url) => {
      try {
        await fetch(url)
        return "answered"
      } catch {
        return "refused"
      }
    }, `${api.api}/boards?organizationId=org_demo`)
    expect(direct).toBe("refused")
  })

  it("two lines: the frame shows the boards, suggests, posts (the row is in PostgreSQL), and every event reaches the host element and onEvent", async () => {
    const frame = await openShop(`{ postUrl: "https://www.shop-example.test/feedback/{slug}" }`)
    await boardsShown(frame)
    expect(await frame.getByRole("radio").evaluateAll((els) => els.map((e) => e.parentElement!.textContent))).toEqual([
      "Feature requests",
      "Bug reports"
    ])
    await frame.getByRole("radio", { name: "Feature requests" }).check()
    await frame.getByLabel("Title").pressSequentially("Dark theme please", { delay: 30 })
    const similar = frame.locator(".similar")
    await expect.poll(() => similar.locator("li strong").allTextContents(), { timeout: 10_000 }).toContain("Dark mode")
    expect(requestsTo("suggestions").map((r) => r.postDataJSON())).toEqual([
      { organizationId: "org_demo", boardId: "b_demo_features", title: "Dark theme please", content: "" }
    ])
    // Same origin as the API: no preflight, no CORS.
    expect(sent.filter((r) => r.method() === "OPTIONS")).toEqual([])
    await shot("suggestion")
    // A suggestion opened: its link, from the template, in a new tab.
    const popup = page.context().waitForEvent("page")
    await similar.getByRole("link", { name: /Dark mode/ }).click()
    await (await popup).close()

    const title = `Frame post ${Date.now()}`
    await frame.getByLabel("Title").fill(title)
    await frame.getByLabel("Details (optional)").fill("From a shop on its own domain.")
    await frame.getByRole("button", { name: "Send feedback" }).click()
    const status = frame.getByRole("status").filter({ hasText: "Thank you" })
    await expect.poll(() => status.count(), { timeout: 10_000 }).toBe(1)
    const rows = await api.db.query<{ id: string; slug: string; board_id: string; content: string }>((sql) =>
      sql`SELECT id, slug, board_id, content FROM posts WHERE title = ${title}`)
    expect(rows).toHaveLength(1)
    expect(rows[0]!.board_id).toBe("b_demo_features")
    expect(rows[0]!.content).toBe("<p>From a shop on its own domain.</p>")
    // With postUrl, the success message links to the new post.
    expect(await status.getByRole("link", { name: /View your post/ }).getAttribute("href"))
      .toBe(`https://www.shop-example.test/feedback/${rows[0]!.slug}`)

    const { dispatched, received } = await events()
    expect(received).toEqual(dispatched)
    expect(dispatched.map((e: { type: string }) => e.type)).toEqual([
      "hearken:ready", "hearken:suggestions", "hearken:suggestion-selected", "hearken:submitted"
    ])
    expect(dispatched[0].detail).toEqual({ locale: "en", dir: "ltr", theme: "light" })
    expect(dispatched[1].detail.boardId).toBe("b_demo_features")
    expect(dispatched[2].detail.url).toMatch(/^https:\/\/www\.shop-example\.test\/feedback\//)
    expect(dispatched[3].detail).toEqual({ id: rows[0]!.id, slug: rows[0]!.slug, boardId: "b_demo_features" })
    // Nothing the visitor typed crossed to the page.
    expect(JSON.stringify(dispatched)).not.toMatch(/Dark theme please|From a shop|Frame post/)
  })

  it("the script's data-* attributes alone are enough (`data-organization-id`, `data-target`)", async () => {
    await page.goto(`${shop.origin}/two-lines`)
    const frame = await widgetFrame()
    await boardsShown(frame)
    await expect.poll(async () => (await events()).dispatched.map((e: { type: string }) => e.type)).toEqual(["hearken:ready"])
  })

  it("sizes the frame to the widget: its height follows the content as it grows and shrinks", async () => {
    const frame = await openShop()
    await boardsShown(frame)
    const heights = async () => ({
      frame: await page.locator("#hearken iframe").evaluate((el) => el.getBoundingClientRect().height),
      widget: await frame.evaluate(() => Math.ceil(document.body.firstElementChild!.getBoundingClientRect().height))
    })
    await expect.poll(async () => { const h = await heights(); return h.frame === h.widget }).toBe(true)
    const before = (await heights()).frame
    expect(before).toBeGreaterThan(250)
    // No inner scroll bar: the frame's document is no taller than the frame.
    expect(await frame.evaluate(() => document.documentElement.scrollHeight <= innerHeight)).toBe(true)
    await frame.getByRole("radio", { name: "Feature requests" }).check()
    await frame.getByLabel("Title").fill("Dark theme please")
    await expect.poll(() => frame.locator(".similar li").count(), { timeout: 10_000 }).toBeGreaterThan(0)
    await expect.poll(async () => { const h = await heights(); return h.frame === h.widget && h.frame > before + 40 }).toBe(true)
    await frame.getByLabel("Title").fill("")
    await expect.poll(async () => (await heights()).frame).toBe(before)
  })

  it("focus moves into the frame and out of it in the page's order", async () => {
    const frame = await openShop()
    await boardsShown(frame)
    await page.getByRole("link", { name: "Before" }).focus()
    await page.keyboard.press("Tab")
    await expect.poll(() => focusedIn(frame)).toBe("button tab Give feedback")
    expect(await page.evaluate(() => document.activeElement?.tagName)).toBe("IFRAME")
    // The frame is another origin's process: focus leaving it reaches the page a moment later.
    await page.keyboard.press("Shift+Tab")
    await expect.poll(focusedInPage).toBe("a Before")
    // From the frame's last control to the page's next link.
    await frame.getByRole("button", { name: "Send feedback" }).focus()
    await page.keyboard.press("Tab")
    await expect.poll(focusedInPage).toBe("a After")
  })

  it("ignores another frame's messages: no forged event, height or label in the page; no forged token or init in the widget", async () => {
    const frame = await openShop("{}", { evil: String(shop.port) })
    await boardsShown(frame)
    const title = `Genuine ${Date.now()}`
    await frame.getByRole("radio", { name: "Feature requests" }).check()
    await frame.getByLabel("Title").fill(title)
    await frame.getByRole("button", { name: "Send feedback" }).click()
    await expect.poll(() => frame.getByRole("status").filter({ hasText: "Thank you" }).count(), { timeout: 10_000 }).toBe(1)
    // The evil frame kept sending all along.
    expect(page.frames().some((f) => f.url().startsWith(`http://evil.test:${shop.port}/evil`))).toBe(true)
    const body = requestsTo("feedback")[0]!.postDataJSON()
    expect(body.organizationId).toBe("org_demo")
    expect("token" in body).toBe(false)
    const { dispatched } = await events()
    // (A suggestion may or may not have been asked for before the post: not what this is about.)
    expect(dispatched.map((e: { type: string }) => e.type).filter((type: string) => type !== "hearken:suggestions"))
      .toEqual(["hearken:ready", "hearken:submitted"])
    expect(JSON.stringify(dispatched)).not.toContain("forged")
    expect(await page.locator("#hearken iframe").evaluate((el) => el.getBoundingClientRect().height)).toBeGreaterThan(100)
    expect(await page.locator("#hearken iframe").getAttribute("title")).toBe("Feedback")
  })

  it("takes the token, and setToken, through the frame: the post is attached to a contact", async () => {
    const secret = new TextEncoder().encode(demo.organizations[0].jwtSecrets[0])
    const sign = (email: string) =>
      new SignJWT({ email, id: email, name: "Frame User" }).setProtectedHeader({ alg: "HS256", typ: "JWT" })
        .setAudience("org_demo").setIssuedAt().setExpirationTime("1h").sign(secret)
    const first = await sign("first@example.com")
    const frame = await openShop(`{ token: ${JSON.stringify(first)} }`)
    await boardsShown(frame)
    const later = await sign("later@example.com")
    await page.evaluate((token) => (window as any).hearken.setToken(token), later)
    const title = `Signed in the frame ${Date.now()}`
    await frame.getByRole("radio", { name: "Bug reports" }).check()
    await frame.getByLabel("Title").fill(title)
    await frame.getByRole("button", { name: "Send feedback" }).click()
    await expect.poll(() => frame.getByRole("status").filter({ hasText: "Thank you" }).count(), { timeout: 10_000 }).toBe(1)
    const rows = await api.db.query<{ email: string }>((sql) =>
      sql`SELECT c.email FROM posts p JOIN contacts c ON c.id = p.contact_id WHERE p.title = ${title}`)
    expect(rows).toEqual([{ email: "later@example.com" }])
  })

  it("takes theme, accent and --hearken- variables as options; destroy removes the frame and stops its events", async () => {
    const frame = await openShop(`{ theme: "dark", accent: "#0f766e", variables: { "--hearken-radius": "3px", "color": "red" } }`)
    await boardsShown(frame)
    const look = await frame.evaluate(() => {
      const hk = document.body.firstElementChild!.shadowRoot!.querySelector(".hk") as HTMLElement
      const style = getComputedStyle(hk)
      return { dark: hk.classList.contains("dark"), radius: style.borderRadius, color: hk.style.getPropertyValue("color") }
    })
    expect(look).toEqual({ dark: true, radius: "3px", color: "" })
    expect(await frame.locator("button.primary").evaluate((el) => getComputedStyle(el).backgroundColor)).toBe("rgb(15, 118, 110)")
    await shot("dark")
    await page.evaluate(() => (window as any).hearken.destroy())
    expect(await page.locator("#hearken iframe").count()).toBe(0)
  })

  it("init on a target that has a widget replaces it: one frame, one set of events", async () => {
    const frame = await openShop()
    await boardsShown(frame)
    await page.evaluate(() => {
      ;(window as any).HearkenWidget.init({ organizationId: "org_demo", target: "#hearken" })
      ;(window as any).HearkenWidget.init({ organizationId: "org_demo", target: "#hearken" })
    })
    await expect.poll(() => page.locator("#hearken iframe").count()).toBe(1)
    await expect.poll(async () => (await events()).dispatched.filter((e: { type: string }) => e.type === "hearken:ready").length, { timeout: 10_000 }).toBe(2)
    await page.waitForTimeout(500)
    expect((await events()).dispatched.filter((e: { type: string }) => e.type === "hearken:ready").length).toBe(2)
  })

  it("options that cannot cross as data (a function among the messages, an Intl.Locale) are dropped, as widget.js ignores them: the widget renders", async () => {
    const frame = await openShop(`{ messages: { submit: "Post it", sending: () => "no" }, locale: new Intl.Locale("de") }`)
    await boardsShown(frame)
    expect(await frame.locator("button.primary").textContent()).toBe("Post it")
    expect(await frame.getByRole("tab").first().textContent()).toBe("Give feedback")
  })

  it("after destroy(), nothing: open(), close() and a second destroy() dispatch nothing and leave a replacement alone", async () => {
    const frame = await openShop(`{ mode: "launcher" }`)
    await expect.poll(() => page.getByRole("button", { name: "Feedback" }).isVisible(), { timeout: 10_000 }).toBe(true)
    const after = await page.evaluate(() => {
      const w = window as any
      const first = w.hearken
      first.destroy()
      first.open()
      first.close()
      const second = w.HearkenWidget.init({ organizationId: "org_demo", target: "#hearken" })
      first.destroy() // must not forget `second`: a third init still replaces it
      w.HearkenWidget.init({ organizationId: "org_demo", target: "#hearken" })
      return { events: w.dispatched.map((e: { type: string }) => e.type), second: typeof second.destroy }
    })
    expect(after).toEqual({ events: ["hearken:ready"], second: "function" })
    await expect.poll(() => frame.isDetached()).toBe(true)
    await expect.poll(() => page.locator("#hearken iframe").count()).toBe(1)
  })

  it("a postUrl function cannot cross to the frame: the site owner is told, and suggestions stay text", async () => {
    const warnings: Array<string> = []
    page.on("console", (message) => {
      if (message.type() === "warning") warnings.push(message.text())
    })
    const frame = await openShop(`{ postUrl: (s) => "/p/" + s.slug }`)
    await boardsShown(frame)
    expect(warnings.filter((w) => w === "Hearken: embed.js takes postUrl as a template")).toHaveLength(1)
    await frame.getByRole("radio", { name: "Feature requests" }).check()
    await frame.getByLabel("Title").fill("Dark theme please")
    await expect.poll(() => frame.locator(".similar li").count(), { timeout: 10_000 }).toBeGreaterThan(0)
    expect(await frame.locator(".similar a").count()).toBe(0)
  })
})

describe("the frame page", () => {
  it("is served with a Content-Security-Policy fit for it, framed by any site unless WIDGET_FRAME_ANCESTORS says otherwise", async () => {
    const res = await fetch(`${api.origin}/widget/frame`)
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8")
    expect(res.headers.get("x-content-type-options")).toBe("nosniff")
    const csp = res.headers.get("content-security-policy")!
    expect(csp).toMatch(/^default-src 'none'; script-src 'self'; style-src 'sha256-[\w+/]+=' 'sha256-[\w+/]+='; img-src \* data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors \*$/)
    expect(await res.text()).toBe(readFileSync(join(root, "packages/widget/dist/frame.html"), "utf8"))
    for (const file of ["embed.js", "frame.js", "launcher.js", "suggestions.js", "updates.js"]) {
      const script = await fetch(`${api.origin}/widget/${file}`)
      expect([file, script.status, script.headers.get("content-type"), script.headers.get("access-control-allow-origin")])
        .toEqual([file, 200, "text/javascript; charset=utf-8", "*"])
    }
  })

  it("with WIDGET_FRAME_ANCESTORS set, the browser refuses the frame on any other site", async () => {
    const strict = await startSeededServer(demo, { WIDGET_FRAME_ANCESTORS: "http://only.test:1" })
    try {
      expect((await fetch(`${strict.origin}/widget/frame`)).headers.get("content-security-policy")).toMatch(/; frame-ancestors http:\/\/only\.test:1$/)
      await page.goto(`${shop.origin}/?${new URLSearchParams({ init: `{ baseUrl: ${JSON.stringify(strict.origin)} }` })}`)
      await page.waitForTimeout(1_500)
      expect(sent).toEqual([]) // the frame never ran
      expect((await events()).dispatched).toEqual([])
    } finally {
      await strict.close()
    }
  })

  it("styles the widget under its policy: no violation is reported, and the stylesheet applies", async () => {
    const violations: Array<string> = []
    page.on("console", (message) => {
      if (/Content Security Policy/i.test(message.text())) violations.push(message.text())
    })
    const frame = await openShop(`{ updateUrl: "/changelog/{slug}" }`)
    await boardsShown(frame)
    await frame.getByRole("tab", { name: "What's new" }).click()
    await expect.poll(() => frame.locator(".updates > li").count(), { timeout: 10_000 }).toBe(2)
    expect(await frame.locator("[role=tablist]").evaluate((el) => getComputedStyle(el).display)).toBe("flex")
    expect(await frame.locator(".updates > li").first().evaluate((el) => getComputedStyle(el).borderBottomStyle)).toBe("solid")
    // The demo's cover, on a host this browser cannot reach, failed and left no broken image behind.
    await expect.poll(() => frame.locator("img.cover").count(), { timeout: 5_000 }).toBe(0)
    expect(violations).toEqual([])
  })
})

describe("the changelog and boards through the frame", () => {
  it("links each entry with updateUrl (relative to the shop's page) and shows its image lazily, with empty alt, 16:9; an image that fails leaves no box", async () => {
    // The demo's cover is on example.com, which this browser cannot reach; here one cover is on the shop's site.
    const org = demo.organizations[0]
    const covered = {
      ...demo,
      organizations: [{ ...org, updates: org.updates.map((u: { slug: string }) => u.slug === "csv-export" ? { ...u, imageUrl: `${shop.origin}/cover.png` } : u) }]
    }
    const server = await startSeededServer(covered)
    try {
      await page.goto(`${shop.origin}/?${new URLSearchParams({ init: `{ baseUrl: ${JSON.stringify(server.origin)}, updateUrl: "/changelog/{slug}" }` })}`)
      await expect.poll(() => page.frames().some((f) => f.url().startsWith(`${server.origin}/widget/frame`)), { timeout: 10_000 }).toBe(true)
      const frame = page.frames().find((f) => f.url().startsWith(`${server.origin}/widget/frame`))!
      await boardsShown(frame)
      await frame.getByRole("tab", { name: "What's new" }).click()
      await expect.poll(() => frame.locator(".updates > li").count(), { timeout: 10_000 }).toBe(2)
      expect(await frame.locator(".updates h2 a").evaluateAll((els) => els.map((a) => a.getAttribute("href")))).toEqual([
        `${shop.origin}/changelog/csv-export`,
        `${shop.origin}/changelog/dark-mode-is-here`
      ])
      const image = frame.locator("img.cover")
      await expect.poll(() => image.evaluateAll((imgs) => imgs.map((img) => (img as HTMLImageElement).naturalWidth)), { timeout: 10_000 }).toEqual([16])
      expect(await image.evaluate((img) => ({
        src: img.getAttribute("src"),
        alt: img.getAttribute("alt"),
        loading: img.getAttribute("loading"),
        ratio: getComputedStyle(img).aspectRatio,
        height: Math.round(img.getBoundingClientRect().height / img.getBoundingClientRect().width * 90)
      }))).toEqual({ src: `${shop.origin}/cover.png`, alt: "", loading: "lazy", ratio: "16 / 9", height: 51 })
      await shot("changelog")
    } finally {
      await server.close()
    }
  })

  it("boardId preselects a board", async () => {
    const frame = await openShop(`{ boardId: "b_demo_bugs" }`)
    await boardsShown(frame)
    expect(await frame.getByRole("radio", { name: "Bug reports" }).isChecked()).toBe(true)
    expect(await frame.getByRole("radio", { name: "Feature requests" }).isChecked()).toBe(false)
  })

  it("with one public board, the choice is hidden and the post goes to that board", async () => {
    const org = demo.organizations[0]
    const single = {
      ...demo,
      organizations: [{ ...org, boards: org.boards.filter((b: { id: string }) => b.id !== "b_demo_bugs"), posts: org.posts.filter((p: { boardId: string }) => p.boardId !== "b_demo_bugs") }]
    }
    const one = await startSeededServer(single)
    try {
      // A boardId no longer listed (the board was removed) does not stop the only one being chosen.
      await page.goto(`${shop.origin}/?${new URLSearchParams({ init: `{ baseUrl: ${JSON.stringify(one.origin)}, boardId: "b_demo_bugs" }` })}`)
      await expect.poll(() => page.frames().some((f) => f.url().startsWith(`${one.origin}/widget/frame`)), { timeout: 10_000 }).toBe(true)
      const frame = page.frames().find((f) => f.url().startsWith(`${one.origin}/widget/frame`))!
      await expect.poll(() => frame.locator("fieldset").evaluate((el) => (el as HTMLElement).hidden), { timeout: 10_000 }).toBe(true)
      expect(await frame.getByRole("radio").count()).toBe(0) // hidden: not in the accessibility tree
      const title = `Only board ${Date.now()}`
      await frame.getByLabel("Title").fill(title)
      await frame.getByRole("button", { name: "Send feedback" }).click()
      await expect.poll(() => frame.getByRole("status").filter({ hasText: "Thank you" }).count(), { timeout: 10_000 }).toBe(1)
      const rows = await one.db.query<{ board_id: string }>((sql) => sql`SELECT board_id FROM posts WHERE title = ${title}`)
      expect(rows).toEqual([{ board_id: "b_demo_features" }])
    } finally {
      await one.close()
    }
  })
})

describe("limits, checked before any request, in the visitor's language", () => {
  const de = translator(merge(en, deMessages), "de")

  it("a German title of 201 characters: the limit named, no suggestion asked, nothing posted; a live count near the limit", async () => {
    const frame = await openShop(`{ locale: "de" }`)
    await boardsShown(frame)
    await frame.getByRole("radio", { name: "Feature requests" }).check()
    const title = frame.getByLabel("Titel")
    const error = frame.locator(".field").first().locator(".error")
    const count = frame.locator(".field").first().locator(".count")
    await title.fill("x".repeat(150))
    expect(await count.textContent()).toBe("")
    await title.fill("x".repeat(190))
    expect(await count.textContent()).toBe(de("charsLeft", { count: 10 }))
    expect(await count.textContent()).toBe("Noch 10 Zeichen")
    await expect.poll(() => requestsTo("suggestions").length, { timeout: 10_000 }).toBe(1)
    // 200 emoji are 200 code points (400 UTF-16 units): within the limit, as the API counts.
    await title.fill("👍".repeat(200))
    expect(await count.textContent()).toBe(de("charsLeft", { count: 0 }))
    expect(await title.getAttribute("aria-invalid")).toBe(null)
    await title.fill(`${"ü".repeat(200)}!`)
    expect(await error.textContent()).toBe("Höchstens 200 Zeichen.")
    expect(await title.getAttribute("aria-invalid")).toBe("true")
    expect(await count.textContent()).toBe("")
    // Past the scheduler's pause and its 12 s spacing: the long draft is never sent.
    await page.waitForTimeout(13_500)
    expect(requestsTo("suggestions").map((r) => r.postDataJSON().title.length)).toEqual([190])
    await frame.getByRole("button", { name: "Feedback senden" }).click()
    expect(await error.textContent()).toBe("Höchstens 200 Zeichen.")
    await expect.poll(() => focusedIn(frame)).toMatch(/^input/)
    expect(requestsTo("feedback")).toEqual([])
    await shot("too-long")
    // One character less: it is asked about again.
    await title.fill("ü".repeat(200))
    expect(await error.textContent()).toBe("")
    await expect.poll(() => requestsTo("suggestions").length, { timeout: 10_000 }).toBe(2)
  }, 40_000)
})

describe("the launcher", () => {
  it("in the frame: a labelled button in the end corner opens the widget; Escape, the button and a click outside close it; focus follows", async () => {
    await page.goto(`${shop.origin}/?${new URLSearchParams({ init: `{ mode: "launcher" }` })}`)
    const button = page.getByRole("button", { name: "Feedback" })
    await expect.poll(() => button.isVisible(), { timeout: 10_000 }).toBe(true)
    expect(await button.getAttribute("aria-expanded")).toBe("false")
    const frame = await widgetFrame()
    // The label came from the frame, which rendered in its hidden popover.
    expect(await page.locator("#hearken iframe").isVisible()).toBe(false)
    const box = (await button.boundingBox())!
    expect(box.x + box.width).toBeGreaterThan(720 - 40) // the end corner: right, left to right
    expect(box.y + box.height).toBeGreaterThan(900 - 40)

    await button.click()
    expect(await button.getAttribute("aria-expanded")).toBe("true")
    await expect.poll(() => page.locator("#hearken iframe").isVisible()).toBe(true)
    await boardsShown(frame)
    await expect.poll(() => focusedIn(frame)).toBe("button tab Give feedback")
    await shot("launcher-open", "page")
    await page.keyboard.press("Escape")
    await expect.poll(() => page.locator("#hearken iframe").isVisible()).toBe(false)
    expect(await focusedInPage()).toBe("button Feedback")

    await page.keyboard.press("Enter")
    await expect.poll(() => page.locator("#hearken iframe").isVisible()).toBe(true)
    await expect.poll(() => focusedIn(frame)).toBe("button tab Give feedback")
    await page.getByRole("heading", { name: "A shop on its own domain" }).click()
    await expect.poll(() => page.locator("#hearken iframe").isVisible()).toBe(false)
    await button.click()
    await button.click()
    expect(await page.locator("#hearken iframe").isVisible()).toBe(false)

    const { dispatched, received } = await events()
    expect(received).toEqual(dispatched)
    expect(dispatched.map((e: { type: string }) => e.type)).toEqual([
      "hearken:ready", "hearken:open", "hearken:close", "hearken:open", "hearken:close", "hearken:open", "hearken:close"
    ])
  })

  it("on a page whose CSP allows Hearken as frame-src and script-src, and no inline style: the button is drawn, opens the widget, and takes the accent", async () => {
    await page.goto(`${shop.origin}/two-lines?csp&mode=launcher`)
    const button = page.getByRole("button", { name: "Feedback" })
    await expect.poll(() => button.isVisible(), { timeout: 10_000 }).toBe(true)
    // Its stylesheet applies (a constructed one, which style-src does not govern): fixed in the end corner, in the accent.
    const box = (await button.boundingBox())!
    expect([box.x + box.width > 720 - 40, box.y + box.height > 900 - 40]).toEqual([true, true])
    expect(await button.evaluate((el) => getComputedStyle(el).backgroundColor)).toBe("rgb(67, 56, 202)")
    await button.click()
    await boardsShown(await widgetFrame())

    await page.goto(`${shop.origin}/?${new URLSearchParams({ init: `{ mode: "launcher", accent: "#0f766e" }` })}`)
    await expect.poll(() => button.isVisible(), { timeout: 10_000 }).toBe(true)
    expect(await button.evaluate((el) => getComputedStyle(el).backgroundColor)).toBe("rgb(15, 118, 110)")
  })

  it("mirrors in Arabic: the end corner is on the left, and the label is Arabic", async () => {
    await page.goto(`${shop.origin}/?${new URLSearchParams({ init: `{ mode: "launcher", locale: "ar" }`, lang: "ar" })}`)
    const button = page.getByRole("button", { name: ar.launcher })
    await expect.poll(() => button.isVisible(), { timeout: 10_000 }).toBe(true)
    expect((await button.boundingBox())!.x).toBeLessThan(40)
    await button.click()
    const frame = await widgetFrame()
    await boardsShown(frame)
    await shot("launcher-ar", "page")
  })

  it("`position: start` puts it in the start corner", async () => {
    await page.goto(`${shop.origin}/?${new URLSearchParams({ init: `{ mode: "launcher", position: "start" }` })}`)
    const button = page.getByRole("button", { name: "Feedback" })
    await expect.poll(() => button.isVisible(), { timeout: 10_000 }).toBe(true)
    expect((await button.boundingBox())!.x).toBeLessThan(40)
  })

  it("in the page (widget.js on an allowed origin): the same button, popover, keys and events", async () => {
    await page.goto(`${allowed.origin}/?${new URLSearchParams({ init: `{ mode: "launcher" }` })}`)
    const button = page.getByRole("button", { name: "Feedback" })
    await expect.poll(() => button.isVisible(), { timeout: 10_000 }).toBe(true)
    const tab = page.getByRole("tab", { name: "Give feedback" })
    expect(await tab.isVisible()).toBe(false)
    await button.click()
    await expect.poll(() => tab.isVisible()).toBe(true)
    await expect.poll(() => focusedInPage()).toBe("button Give feedback")
    await expect.poll(() => page.getByRole("radio").count(), { timeout: 10_000 }).toBe(2)
    await shot("launcher-in-page", "page")
    await page.keyboard.press("Escape")
    await expect.poll(() => tab.isVisible()).toBe(false)
    expect(await focusedInPage()).toBe("button Feedback")
    const { dispatched } = await page.evaluate(() => ({ dispatched: (window as any).dispatched }))
    expect(dispatched.map((e: { type: string }) => e.type)).toEqual(["hearken:ready", "hearken:open", "hearken:close"])
    // init again on the target: the launcher is replaced, not doubled.
    await page.evaluate(() => (window as any).HearkenWidget.init({ organizationId: "org_demo", target: "#hearken", mode: "launcher" }))
    await expect.poll(() => page.getByRole("button", { name: "Feedback" }).count(), { timeout: 10_000 }).toBe(1)
  })
})

describe("accessibility and languages in the frame", () => {
  // axe is injected into the frame by the test; the frame's own policy would refuse it.
  beforeEach(() => newPage({ bypassCSP: true }))

  const auditFrame = async (frame: Frame) => {
    if (!(await frame.evaluate(() => "axe" in window))) await frame.evaluate(axeSource)
    return frame.evaluate(async () => {
      // Every rule, but the three that judge a whole page (one main landmark, one h1, all content in landmarks):
      // the frame is a part of the host's page, as the in-page widget is.
      const result = await (window as any).axe.run(document, {
        rules: { "landmark-one-main": { enabled: false }, "page-has-heading-one": { enabled: false }, region: { enabled: false } }
      })
      return result.violations.map((v: any) => `${v.impact} ${v.id}: ${v.nodes.map((n: any) => n.failureSummary).join(" | ")}`)
    })
  }

  it("has no axe-core violations inside the frame in en, de, ja and ar, light and dark, form and changelog", async () => {
    for (const locale of ["en", "de", "ja", "ar"]) {
      for (const theme of ["light", "dark"]) {
        const frame = await openShop(`{ locale: "${locale}", theme: "${theme}" }`)
        await boardsShown(frame)
        expect(await frame.evaluate(() => document.documentElement.lang)).toBe(locale)
        await frame.getByRole("radio").first().check()
        await frame.locator("input[name=title]").fill("Dark theme please")
        await expect.poll(() => frame.locator(".similar li").count(), { timeout: 10_000 }).toBeGreaterThan(0)
        expect([locale, theme, "form", await auditFrame(frame)]).toEqual([locale, theme, "form", []])
        await frame.getByRole("tab").nth(1).click()
        await expect.poll(() => frame.locator(".updates > li").count(), { timeout: 10_000 }).toBe(2)
        expect([locale, theme, "changelog", await auditFrame(frame)]).toEqual([locale, theme, "changelog", []])
        await shot(`${locale}-${theme}`)
      }
    }
  }, 120_000)

  it("no tab label breaks inside a word at 360 px, in any shipped language", async () => {
    await page.setViewportSize({ width: 360, height: 800 })
    const { shipped } = await import("../packages/widget/src/i18n.ts")
    const broken: Array<string> = []
    for (const locale of ["en", ...shipped]) {
      const frame = await openShop(`{ locale: "${locale}" }`)
      await boardsShown(frame)
      const labels = await frame.evaluate(() => {
        const tabs = [...document.body.firstElementChild!.shadowRoot!.querySelectorAll("[role=tab]")]
        return tabs.map((tab) => {
          const text = tab.firstChild as Text
          // Each word (the whole label where a language has no spaces) on one line.
          const words = [...text.data.matchAll(/\S+/g)]
          const split = words.filter((word) => {
            const range = document.createRange()
            range.setStart(text, word.index)
            range.setEnd(text, word.index + word[0].length)
            return new Set([...range.getClientRects()].map((rect) => Math.round(rect.top))).size > 1
          })
          return { label: text.data, split: split.map((w) => w[0]) }
        })
      })
      for (const { label, split } of labels) if (split.length > 0) broken.push(`${locale}: ${label} (${split.join(", ")})`)
      if (locale === "ja") await shot("ja-360")
    }
    expect(broken).toEqual([])
  }, 120_000)
})
