/**
 * The embeddable widget (packages/widget) in Debian's Chromium, against the
 * real server seeded with the demo fixture. The host page is served from
 * another origin, which the API allows through `DASHBOARD_ORIGIN`, and embeds
 * the widget from the API's origin exactly as docs/widget.md tells site owners
 * to. A third origin, not allowed, sees its API calls refused by CORS.
 * Nothing intercepts the browser's requests (no `page.route`): Playwright
 * would answer CORS preflights itself and hide a refused one (decision 0015).
 * Faults are made by real servers instead. Screenshots go to
 * test-artifacts/widget-*.png.
 */
import { execFileSync } from "node:child_process"
import { mkdirSync, readFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { join } from "node:path"
import { Limits } from "@hearken/api/thin"
import { SignJWT } from "jose"
import type { Browser, Page, Request } from "playwright-core"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest"
import { check } from "../packages/widget/src/checks.ts"
import { merge, translator } from "../packages/widget/src/i18n.ts"
import deMessages from "../packages/widget/src/locales/de.ts"
import { en } from "../packages/widget/src/messages.ts"
import { bundleSizes } from "./support/sizes.ts"
import { SuggestionScheduler } from "../packages/widget/src/scheduler.ts"
import { launchChromium } from "./support/browser.js"
import { listenOnLoopback } from "./support/net.js"
import { faultyProxy } from "./support/proxy.js"
import { postJson, startSeededServer, type TestServer } from "./support/server.js"
import { audit, hostPageServer } from "./support/widget.js"

const root = join(import.meta.dirname, "..")
const artifacts = join(root, "test-artifacts")
const demo = JSON.parse(readFileSync(join(root, "packages/server/fixtures/demo.json"), "utf8"))

let api: TestServer
let allowed: { server: Server; origin: string }
let refused: { server: Server; origin: string }
/** Served on 127.0.0.1, reached as `http://shop.localhost:PORT`: a subdomain of `ROOT_DOMAIN`. */
let subdomain: { server: Server; origin: string }
let browser: Browser

beforeAll(async () => {
  // The bundle under test, from the current sources (npm test builds it too).
  execFileSync(process.execPath, [join(root, "packages/widget/build.mjs")], { stdio: "inherit" })
  mkdirSync(artifacts, { recursive: true })
  let apiOrigin = ""
  // `?api=` embeds the widget from another server than the API (a proxy, a second API), which it then calls.
  allowed = await hostPageServer(() => apiOrigin)
  refused = await hostPageServer(() => apiOrigin)
  const shop = await hostPageServer(() => apiOrigin)
  subdomain = { server: shop.server, origin: shop.origin.replace("127.0.0.1", "shop.localhost") }
  // PUBLIC_URL is http (local work), so http subdomains of ROOT_DOMAIN are allowed.
  api = await startSeededServer(demo, { DASHBOARD_ORIGIN: allowed.origin, ROOT_DOMAIN: "localhost" })
  apiOrigin = api.origin
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  allowed?.server.close()
  refused?.server.close()
  subdomain?.server.close()
  await api?.close()
})

let page: Page
/** Every request the page sent to the API, in order. */
let sent: Array<Request>

beforeEach(async () => {
  const context = await browser.newContext({ viewport: { width: 720, height: 900 } })
  page = await context.newPage()
  sent = []
  // The API, or a server standing in front of it. (The demo changelog's image on example.com fails: see launchChromium.)
  page.on("request", (request) => {
    if (new URL(request.url()).pathname.startsWith("/api/widget/v1/")) sent.push(request)
  })
})

afterEach(async () => {
  await page.context().close()
})

const open = async (url: string) => {
  await page.goto(url)
  await page.getByRole("radio", { name: "Feature requests" }).waitFor()
}

const shot = (name: string) => page.locator("#hearken").screenshot({ path: join(artifacts, `widget-${name}.png`) })

const requestsTo = (path: string, method = "POST") =>
  sent.filter((r) => r.method() === method && new URL(r.url()).pathname === `/api/widget/v1/${path}`)

/** The focused element, looking into shadow roots. */
const focused = () =>
  page.evaluate(() => {
    let el = document.activeElement
    while (el?.shadowRoot?.activeElement) el = el.shadowRoot.activeElement
    if (el === null) return null
    const style = getComputedStyle(el.tagName === "INPUT" && (el as HTMLInputElement).type === "radio" ? el.parentElement! : el)
    return {
      tag: el.tagName.toLowerCase(),
      role: el.getAttribute("role"),
      name: el.getAttribute("name") ?? el.textContent,
      outline: `${style.outlineStyle} ${style.outlineWidth}`
    }
  })

describe("the widget on an allowed origin", () => {
  it("lists the public boards, and a draft like a demo post shows it once typing pauses, in a live region", async () => {
    await open(allowed.origin)
    const radios = page.getByRole("radio")
    expect(await radios.evaluateAll((els) => els.map((e) => (e.parentElement as HTMLElement).textContent))).toEqual([
      "Feature requests",
      "Bug reports"
    ])
    await page.getByRole("radio", { name: "Feature requests" }).check()
    await page.getByLabel("Title").pressSequentially("Dark theme please", { delay: 40 })
    const similar = page.locator(".similar")
    await expect.poll(() => similar.locator("li strong").allTextContents(), { timeout: 5_000 }).toContain("Dark mode")
    expect(await similar.getAttribute("aria-live")).toBe("polite")
    expect(await similar.locator("li strong").first().textContent()).toBe("Dark mode")
    // 17 keystrokes, one request: it waited for the pause.
    expect(requestsTo("suggestions")).toHaveLength(1)
    expect(requestsTo("suggestions")[0]!.postDataJSON()).toEqual({
      organizationId: "org_demo",
      boardId: "b_demo_features",
      title: "Dark theme please",
      content: ""
    })
    await shot("suggestion")
    // More typing within 12 s of that request: nothing more is sent yet (5 a minute, one per 12 s).
    await page.getByLabel("Details (optional)").pressSequentially("for late-night work", { delay: 20 })
    await page.waitForTimeout(1_500)
    expect(requestsTo("suggestions")).toHaveLength(1)
  })

  it("waits out a real 429 quietly: no error banner", async () => {
    // A second API at the spec's limits (multiplier 1): five suggestions from this address use up its minute.
    const limited = await startSeededServer(demo, { DASHBOARD_ORIGIN: allowed.origin, RATE_LIMIT_MULTIPLIER: "1" })
    try {
      const draft = { organizationId: "org_demo", boardId: "b_demo_features", title: "Dark theme", content: "" }
      for (let i = 0; i < 5; i++) expect((await postJson(`${limited.api}/suggestions`, draft)).status).toBe(200)
      await open(`${allowed.origin}/?api=${limited.origin}`)
      await page.getByRole("radio", { name: "Feature requests" }).check()
      await page.getByLabel("Title").fill("Dark theme")
      await expect.poll(() => requestsTo("suggestions").length, { timeout: 5_000 }).toBe(1)
      const refusal = (await requestsTo("suggestions")[0]!.response())!
      expect(refusal.status()).toBe(429)
      expect(await refusal.json()).toMatchObject({ _tag: "RateLimitExceededError" })
      expect(Number(refusal.headers()["retry-after"])).toBeGreaterThan(0)
      await page.waitForTimeout(300)
      expect(await page.getByRole("alert").textContent()).toBe("")
      expect(await page.locator(".similar").textContent()).toBe("")
      // Quiet for the visitor, not for the host page.
      expect(await page.evaluate(() => (window as any).dispatched.map((e: any) => [e.type, e.detail]))).toEqual([
        ["hearken:ready", { locale: "en", dir: "ltr", theme: "light" }],
        ["hearken:error", { _tag: "RateLimitExceededError", operation: "suggestions" }]
      ])
    } finally {
      await page.context().close()
      await limited.close()
    }
  })

  it("submits with an Idempotency-Key: a double click and a retry after a network error make one post", async () => {
    const title = `Keyboard shortcuts ${Date.now()}`
    // The first attempt reaches the server, which creates the post, but the browser sees the connection drop.
    const proxy = await faultyProxy(api.origin)
    try {
      proxy.dropNextAnswer((request) => request.method === "POST" && request.url === "/api/widget/v1/feedback")
      await open(`${allowed.origin}/?api=${proxy.origin}`)
      await page.getByRole("radio", { name: "Bug reports" }).check()
      await page.getByLabel("Title").fill(title)
      await page.getByLabel("Details (optional)").fill("Please add j/k navigation <b>now</b>.")
      await page.getByRole("button", { name: "Send feedback" }).dblclick()
      await expect.poll(() => page.getByRole("alert").textContent()).toBe("Can't reach the feedback service from this page.")
      expect(proxy.dropped).toEqual([200])
      expect(requestsTo("feedback")).toHaveLength(1)
      await page.getByRole("button", { name: "Send feedback" }).click()
      const success = page.getByRole("status").filter({ hasText: "Thank you" })
      await expect.poll(() => success.textContent()).toBe(`Thank you! Your feedback “${title}” was posted.`)
      expect(await page.getByRole("alert").textContent()).toBe("")
      const keys = requestsTo("feedback").map((r) => r.headers()["idempotency-key"])
      expect(keys).toHaveLength(2)
      expect(keys[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      expect(keys[1]).toBe(keys[0])
      const rows = await api.db.query<{ board_id: string; content: string }>((sql) =>
        sql`SELECT board_id, content FROM posts WHERE title = ${title}`)
      // The typed text, escaped: markup the visitor types stays text.
      expect(rows).toEqual([{ board_id: "b_demo_bugs", content: "<p>Please add j/k navigation &lt;b&gt;now&lt;/b&gt;.</p>" }])
      await shot("success")

      // The next draft gets a new key; the board stays picked.
      await page.getByRole("button", { name: "Send more feedback" }).click()
      expect(await page.getByRole("radio", { name: "Bug reports" }).isChecked()).toBe(true)
      await page.getByLabel("Title").fill(`${title} again`)
      await page.getByRole("button", { name: "Send feedback" }).click()
      await expect.poll(() => success.textContent()).toBe(`Thank you! Your feedback “${title} again” was posted.`)
      expect(new Set(requestsTo("feedback").map((r) => r.headers()["idempotency-key"])).size).toBe(2)
    } finally {
      await page.context().close()
      await proxy.close()
    }
  })

  it("sends the host page's identity token with the post, which is then attached to a contact", async () => {
    const secret = new TextEncoder().encode(demo.organizations[0].jwtSecrets[0])
    const token = await new SignJWT({ email: "alice@example.com", id: "user-123", name: "Alice Example" })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" }).setAudience("org_demo").setIssuedAt().setExpirationTime("1h").sign(secret)
    const title = `Signed in ${Date.now()}`
    await open(`${allowed.origin}/?token=${token}`)
    await page.getByRole("radio", { name: "Feature requests" }).check()
    await page.getByLabel("Title").fill(title)
    await page.getByRole("button", { name: "Send feedback" }).click()
    await expect.poll(() => page.getByRole("status").filter({ hasText: "Thank you" }).count()).toBe(1)
    expect(requestsTo("feedback")[0]!.postDataJSON().token).toBe(token)
    const rows = await api.db.query<{ email: string }>((sql) =>
      sql`SELECT c.email FROM posts p JOIN contacts c ON c.id = p.contact_id WHERE p.title = ${title}`)
    expect(rows).toEqual([{ email: "alice@example.com" }])
  })

  it("shows the server's field-level message next to the field it names", async () => {
    const invisible = "\u200b\u200b"
    const expected = await postJson(`${api.api}/feedback`, {
      organizationId: "org_demo",
      boardId: "b_demo_features",
      title: invisible,
      content: ""
    })
    expect(expected.status).toBe(400)
    const [field, detail] = (expected.body.message as string).split(/: (.*)/s)
    expect(field).toBe("title")

    await open(allowed.origin)
    await page.getByRole("radio", { name: "Feature requests" }).check()
    await page.getByLabel("Title").fill(invisible)
    await page.getByRole("button", { name: "Send feedback" }).click()
    const input = page.getByLabel("Title")
    await expect.poll(() => input.getAttribute("aria-invalid")).toBe("true")
    // Described by its error, then by its live count.
    const describedBy = (await input.getAttribute("aria-describedby"))!.split(" ")
    expect(describedBy.map((id) => id.replace(/^hk\d+-/, ""))).toEqual(["title-error", "title-count"])
    const message = page.locator(`[id="${describedBy[0]}"]`)
    expect(await message.textContent()).toBe(detail!.charAt(0).toUpperCase() + detail!.slice(1))
    expect((await focused())?.name).toBe("title")
    expect(await page.getByRole("alert").textContent()).toBe("")
    await shot("validation")
    // Typing again clears it.
    await input.pressSequentially("x")
    expect(await input.getAttribute("aria-invalid")).toBe(null)
    expect(await message.textContent()).toBe("")
  })

  it("finds a field's error by its own check, before any request; a 400 the server answers anyway is said for the whole form, whatever field its text names", async () => {
    const proxy = await faultyProxy(api.origin)
    try {
      // The server's message names the title; the widget does not read which field failed from it.
      proxy.override((request) => request.method === "POST" && request.url === "/api/widget/v1/feedback", (request, response) => {
        response.writeHead(400, {
          "content-type": "application/json",
          "access-control-allow-origin": request.headers.origin ?? "*",
          connection: "close"
        })
        response.end(JSON.stringify({ _tag: "DataValidationError", message: "title: refused by a newer server" }))
      })
      await open(`${allowed.origin}/?api=${proxy.origin}`)
      await page.getByRole("radio", { name: "Feature requests" }).check()
      const input = page.getByLabel("Title")
      const error = page.locator(".field").first().locator(".error")
      await input.fill("\u200b\u2800")
      await page.getByRole("button", { name: "Send feedback" }).click()
      await expect.poll(() => input.getAttribute("aria-invalid")).toBe("true")
      expect(await error.textContent()).toBe("Expected a title containing a visible character")
      expect((await focused())?.name).toBe("title")
      expect(requestsTo("feedback")).toEqual([])
      expect(proxy.requests.filter((r) => r.endsWith("/feedback"))).toEqual([])

      await input.fill("A title the server refuses")
      await page.getByRole("button", { name: "Send feedback" }).click()
      await expect.poll(() => page.getByRole("alert").textContent()).toBe("title: refused by a newer server")
      expect(requestsTo("feedback")).toHaveLength(1)
      expect(await input.getAttribute("aria-invalid")).toBe(null)
      expect(await error.textContent()).toBe("")
    } finally {
      await page.context().close()
      await proxy.close()
    }
  })

  it("shows the changelog as rendered HTML, published entries only, and revalidates it with If-None-Match", async () => {
    await open(allowed.origin)
    const tab = page.getByRole("tab", { name: "What's new" })
    await tab.click()
    const panel = page.getByRole("tabpanel", { name: "What's new" })
    await expect.poll(() => panel.locator("h2").allTextContents()).toEqual(["CSV export", "Dark mode is here"])
    const link = panel.getByRole("link", { name: "Settings" })
    expect(await link.getAttribute("href")).toBe("https://example.com/settings")
    expect(await link.getAttribute("rel")).toBe("noopener noreferrer nofollow ugc")
    // `&amp;` rendered as HTML, not shown as text.
    expect(await panel.locator(".content p").first().textContent()).toBe("Export every post to CSV & open it in your spreadsheet.")
    expect(await panel.getByRole("img", { name: "Dark mode" }).count()).toBe(1)
    await shot("changelog")

    await page.getByRole("tab", { name: "Give feedback" }).click()
    await tab.click()
    await expect.poll(() => requestsTo("updates", "GET").length).toBe(2)
    const [firstRequest, second] = requestsTo("updates", "GET")
    const etag = (await firstRequest!.response())!.headers()["etag"]
    expect(etag).toMatch(/^"/)
    expect(second!.headers()["if-none-match"]).toBe(etag)
    expect((await second!.response())!.status()).toBe(304)
    // The 304 keeps what was shown.
    expect(await panel.locator("h2").allTextContents()).toEqual(["CSV export", "Dark mode is here"])
  })

  it("is keyboard navigable with visible focus, labelled, with live regions, and its styles isolated", async () => {
    await open(allowed.origin)
    const stops = []
    for (let i = 0; i < 5; i++) {
      await page.keyboard.press("Tab")
      stops.push(await focused())
    }
    expect(stops).toEqual([
      { tag: "button", role: "tab", name: "Give feedback", outline: "solid 3px" },
      { tag: "input", role: null, name: expect.stringMatching(/-board$/), outline: "solid 3px" },
      { tag: "input", role: null, name: "title", outline: "solid 3px" },
      { tag: "textarea", role: null, name: "content", outline: "solid 3px" },
      { tag: "button", role: null, name: "Send feedback", outline: "solid 3px" }
    ])
    // Arrow keys move between the tabs (WAI-ARIA tabs).
    await page.getByRole("tab", { name: "Give feedback" }).focus()
    await page.keyboard.press("ArrowRight")
    expect(await focused()).toEqual({ tag: "button", role: "tab", name: "What's new", outline: "solid 3px" })
    expect(await page.getByRole("tab", { name: "What's new" }).getAttribute("aria-selected")).toBe("true")
    expect(await page.getByRole("tabpanel", { name: "What's new" }).isVisible()).toBe(true)
    await page.keyboard.press("ArrowLeft")
    expect(await page.getByRole("tabpanel", { name: "Give feedback" }).isVisible()).toBe(true)

    // Live regions exist before anything is announced.
    expect(await page.locator("[aria-live=polite].similar").count()).toBe(1)
    expect(await page.getByRole("alert").count()).toBe(1)
    expect(await page.locator("[role=status].success").count()).toBe(1)

    // The host's `button { background: hotpink }` and dashed lime borders do not reach the widget.
    const styles = await page.evaluate(() => {
      const shadow = document.querySelector("#hearken")!.shadowRoot!
      const submit = getComputedStyle(shadow.querySelector("button[type=submit]")!)
      const title = getComputedStyle(shadow.querySelector("input[name=title]")!)
      return { background: submit.backgroundColor, border: title.borderTopStyle, font: getComputedStyle(shadow.querySelector(".hk")!).fontFamily }
    })
    expect(styles.background).toBe("rgb(67, 56, 202)")
    expect(styles.border).toBe("solid")
    expect(styles.font).toMatch(/^system-ui/)
  })

  it("has no serious or critical axe-core violations, in the form with suggestions and in the changelog", async () => {
    await open(allowed.origin)
    await page.getByRole("radio", { name: "Feature requests" }).check()
    await page.getByLabel("Title").fill("Dark theme")
    await expect.poll(() => page.locator(".similar li").count(), { timeout: 5_000 }).toBeGreaterThan(0)
    const form = await audit(page)
    await page.getByRole("tab", { name: "What's new" }).click()
    await page.getByRole("tabpanel", { name: "What's new" }).locator("h2").first().waitFor()
    const changelog = await audit(page)
    console.log(`axe-core: form ${JSON.stringify(form)}, changelog ${JSON.stringify(changelog)}`)
    for (const result of [form, changelog]) {
      // Rules ran inside the shadow root (labels, names, contrast, ARIA), and none failed there, of any impact.
      expect(result.widget.passed).toBeGreaterThan(10)
      expect(result.widget.violations).toEqual([])
      expect(result.page.violations.filter((v: string) => /^(serious|critical) /.test(v))).toEqual([])
    }
  })

  it("the demo page /widget/ on the API's own origin embeds the widget for org_demo", async () => {
    await open(`${api.origin}/widget`)
    expect(await page.getByRole("radio").count()).toBe(2)
    await page.screenshot({ path: join(artifacts, "widget-demo.png") })
  })
})

describe("the widget on a subdomain of ROOT_DOMAIN, another origin and host name than the API", () => {
  it("posts feedback with an Idempotency-Key through the browser's real preflight, and the post is created (decision 0015)", async () => {
    const title = `Cross-origin ${Date.now()}`
    await open(`${subdomain.origin}/`)
    await page.getByRole("radio", { name: "Feature requests" }).check()
    await page.getByLabel("Title").fill(title)
    await page.getByRole("button", { name: "Send feedback" }).click()
    const success = page.getByRole("status").filter({ hasText: "Thank you" })
    const alert = page.getByRole("alert")
    await expect.poll(async () => `${await alert.textContent()}${await success.textContent()}`).not.toBe("")
    expect(await alert.textContent()).toBe("")
    expect(await success.textContent()).toBe(`Thank you! Your feedback “${title}” was posted.`)

    const [post] = requestsTo("feedback")
    const headers = await post!.allHeaders()
    expect(headers["origin"]).toBe(subdomain.origin)
    expect(headers["idempotency-key"]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    const response = (await post!.response())!
    expect(response.status()).toBe(200)
    expect(response.headers()["access-control-allow-origin"]).toBe(subdomain.origin)
    const created = await response.json()
    expect(created).toEqual({
      id: expect.any(String),
      slug: `cross-origin-${title.split(" ")[1]}`,
      title,
      boardId: "b_demo_features",
      organizationId: "org_demo",
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    })
    const rows = await api.db.query<{ id: string; board_id: string }>((sql) => sql`SELECT id, board_id FROM posts WHERE title = ${title}`)
    expect(rows).toEqual([{ id: created.id, board_id: "b_demo_features" }])
  })
})

describe("GET /widget/widget.js", () => {
  it("is the built bundle, as JavaScript any page may load, cached briefly, and not in the OpenAPI document", async () => {
    const res = await fetch(`${api.origin}/widget/widget.js`, { headers: { origin: refused.origin } })
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toBe("text/javascript; charset=utf-8")
    expect(res.headers.get("cache-control")).toBe("public, max-age=300")
    expect(res.headers.get("access-control-allow-origin")).toBe("*")
    expect(await res.text()).toBe(readFileSync(join(root, "packages/widget/dist/widget.js"), "utf8"))
    const doc = await (await fetch(`${api.origin}/docs/openapi.json`)).json()
    expect(Object.keys(doc.paths).filter((path) => path.startsWith("/widget"))).toEqual([])
  })

  it("stays within budget (gzip): the thin client ≤ 3 KB, widget.js ≤ 8 KB, embed.js ≤ 2 KB, the frame's first load ≤ 10 KB, the accent ≤ 1 KB, each part and each language ≤ 1.5 KB", async () => {
    const sizes = await bundleSizes()
    expect(sizes.map((s) => [s.name, s.budgetGzipBytes, s.met])).toEqual([
      ["thin client (@hearken/api/thin)", 3 * 1024, true],
      ["widget, first download (widget.js: CSS, English)", 8 * 1024, true],
      ["embed script (embed.js)", 2 * 1024, true],
      ["frame, first load (frame page, frame.js, its largest language)", 10 * 1024, true],
      ["widget accent, when given (accent.js)", 1024, true],
      ...["launcher", "suggestions", "updates"].map((part) => [`widget part, when used (${part}.js)`, 1.5 * 1024, true]),
      ...["ar", "de", "es", "fr", "he", "it", "ja", "ko", "nl", "pl", "pt-PT", "pt", "ru", "tr", "zh-Hans"].map((tag) =>
        [`widget language, when used (locales/${tag}.js)`, 1.5 * 1024, true])
    ])
  })
})

describe("the widget on an origin the API does not allow", () => {
  it("loads, but its API calls are refused by CORS: a calm message for the visitor, no useless Try again, and the site owner told in the console", async () => {
    const failed: Array<string> = []
    const errors: Array<string> = []
    page.on("requestfailed", (request) => failed.push(new URL(request.url()).pathname))
    page.on("console", (message) => {
      if (message.type() === "error" && message.text().startsWith("Hearken:")) errors.push(message.text())
    })
    await page.goto(`${refused.origin}/`)
    const alert = page.getByRole("alert")
    await expect.poll(() => alert.textContent(), { timeout: 5_000 }).toBe("Feedback isn't available on this page.")
    // Only the API call failed: the server answered a request the page cannot read (no-cors), so it is up, and refuses this origin.
    expect(failed).toEqual(["/api/widget/v1/boards"])
    expect(sent.map((r) => new URL(r.url()).pathname)).toEqual(["/api/widget/v1/boards"])
    expect(errors).toEqual([`Hearken: CORS refuses ${refused.origin}; /widget/embed.js works on any site`])
    expect(await page.getByRole("radio").count()).toBe(0)
    expect(await page.getByRole("button", { name: "Try again" }).count()).toBe(0)
    expect(await page.getByRole("button", { name: "Send feedback" }).count()).toBe(0)
    await shot("cors")
  })

  it("a server that is down is not a refused origin: it says it can't reach it, and offers Try again", async () => {
    const down = await startSeededServer(demo, { DASHBOARD_ORIGIN: allowed.origin })
    const origin = down.origin
    await down.close()
    await page.goto(`${allowed.origin}/?api=${encodeURIComponent(api.origin)}&init=${encodeURIComponent(`{ baseUrl: ${JSON.stringify(origin)} }`)}`)
    const alert = page.getByRole("alert")
    await expect.poll(() => alert.textContent(), { timeout: 5_000 }).toBe("Can't reach the feedback service from this page.")
    expect(await page.getByText("Boards could not be loaded.").count()).toBe(1)
    expect(await page.getByRole("button", { name: "Try again" }).count()).toBe(1)
  })

  it("nor is a proxy in front of a server that is down (502 to everything): Try again", async () => {
    const proxy = createServer((_, res) => res.writeHead(502, { "content-type": "text/plain" }).end("Bad Gateway"))
    const port = await listenOnLoopback(proxy)
    try {
      await page.goto(`${allowed.origin}/?api=${encodeURIComponent(api.origin)}&init=${encodeURIComponent(`{ baseUrl: "http://127.0.0.1:${port}" }`)}`)
      const alert = page.getByRole("alert")
      await expect.poll(() => alert.textContent(), { timeout: 5_000 }).toBe("Can't reach the feedback service from this page.")
      expect(await page.getByRole("button", { name: "Try again" }).count()).toBe(1)
    } finally {
      proxy.close()
    }
  })
})

describe("the widget's own field checks (checks.ts)", () => {
  const english = translator(en, "en")
  const german = translator(merge(en, deMessages), "de")
  const draft = { organizationId: "org_demo", boardId: "b_demo_features", title: "Dark mode", content: "" }

  it("names the first field the API would refuse, in the order the widget always checked them, from the API's limits table", () => {
    expect(check(draft, english, true)).toBe(undefined)
    expect(check({ ...draft, boardId: "" }, english, true)).toEqual(["boardId", "Pick a board."])
    expect(check({ ...draft, title: "" }, english, true)).toEqual(["title", "Please give your feedback a title."])
    expect(check({ ...draft, title: "👍".repeat(Limits.title) }, english, true)).toBe(undefined)
    expect(check({ ...draft, title: "x".repeat(Limits.title + 1) }, english, true)).toEqual(["title", `At most ${Limits.title} characters.`])
    expect(check({ ...draft, content: "x".repeat(Limits.content + 1) }, english, true)).toEqual(["content", "At most 20,000 characters."])
    // Over its limit first, then nothing visible: as the widget checked before the server was asked.
    expect(check({ ...draft, title: "\u200b", content: "x".repeat(Limits.content + 1) }, english, true)?.[0]).toBe("content")
  })

  it("refuses a title with nothing visible in the API's own words in English, and with \"check this field\" in another language", () => {
    for (const title of ["\u200b\u200b", "\u2800", "\u0301", "\u00ad\ufeff"]) {
      expect(check({ ...draft, title }, english, true)).toEqual(["title", "Expected a title containing a visible character"])
      expect(check({ ...draft, title }, german, false)).toEqual(["title", german("fieldInvalid")])
    }
  })
})

describe("SuggestionScheduler", () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 })
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  const make = (answers: Array<number | undefined> = []) => {
    let draft: string | undefined = "a"
    const times: Array<number> = []
    const scheduler = new SuggestionScheduler({
      draftKey: () => draft,
      request: async () => {
        times.push(Date.now())
        return answers.shift()
      }
    })
    return {
      times,
      type: (next: string | undefined) => {
        draft = next
        scheduler.changed()
      }
    }
  }

  it("asks after a 700 ms pause, at most once per 12 s, and never for an unchanged draft", async () => {
    const s = make()
    s.type("d")
    await vi.advanceTimersByTimeAsync(500)
    s.type("da")
    await vi.advanceTimersByTimeAsync(699)
    expect(s.times).toEqual([])
    await vi.advanceTimersByTimeAsync(1)
    expect(s.times).toEqual([1_200])
    s.type("dar")
    await vi.advanceTimersByTimeAsync(20_000)
    expect(s.times).toEqual([1_200, 13_200])
    s.type("dar") // unchanged
    await vi.advanceTimersByTimeAsync(20_000)
    expect(s.times).toEqual([1_200, 13_200])
    s.type(undefined) // nothing worth asking about
    await vi.advanceTimersByTimeAsync(20_000)
    expect(s.times).toEqual([1_200, 13_200])
  })

  it("never sends more than 5 in a rolling minute, and waits Retry-After after a 429", async () => {
    const s = make([undefined, 30])
    for (let i = 0; i < 8; i++) {
      s.type(`draft ${i}`)
      await vi.advanceTimersByTimeAsync(13_000)
    }
    // The second answer was a 429 with Retry-After: 30: the next request waits for it, then asks for the newest draft.
    expect(s.times).toEqual([700, 13_700, 43_700, 55_700, 67_700, 79_700, 91_700])
    for (let i = 0; i < s.times.length; i++) {
      expect(s.times.filter((t) => t > s.times[i]! - 60_000 && t <= s.times[i]!).length).toBeLessThanOrEqual(5)
    }
  })
})
