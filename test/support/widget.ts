/**
 * A site owner's page for the widget's browser tests, served from its own
 * loopback origin, and axe-core run over the widget's shadow root.
 */
import { readFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { join } from "node:path"
import type { Page } from "playwright-core"
import { eventTypes } from "../../packages/widget/src/options.ts"
import { listenOnLoopback } from "./net.js"

const root = join(import.meta.dirname, "../..")
const axeSource = readFileSync(join(root, "node_modules/axe-core/axe.min.js"), "utf8")

/** Every event the widget dispatches. */
export { eventTypes }

export interface HostPage {
  /** The origin `widget.js` is imported from (the API, a proxy in front of it, another API). */
  readonly api: string
  /** `<html lang>`; none when empty. */
  readonly lang?: string | undefined
  readonly token?: string | undefined
  /** More `init` options, as JavaScript source: `{ locale: "de", postUrl: (s) => … }`. */
  readonly init?: string | undefined
  /** CSS for the host page, after its own (`#hearken { --hearken-accent: … }`). */
  readonly style?: string | undefined
}

/**
 * The page: host styles that must not reach the widget, and the two pasted
 * lines. It records the events dispatched on the host element in
 * `window.dispatched` and those passed to `onEvent` in `window.received`, and
 * keeps what `init` returned in `window.hearken`.
 */
export const hostPage = (page: HostPage) => `<!doctype html>
<html${page.lang === "" ? "" : ` lang="${page.lang ?? "en"}"`}><head><meta charset="utf-8"><title>Host page</title>
<style>body { font: 18px Georgia, serif; color: #800000; background: #f3f0e8 } button { background: hotpink; color: black }
input, textarea { border: 4px dashed lime }${page.style ?? ""}</style></head>
<body><main><h1>A customer's site</h1>
<div id="hearken"></div>
<script type="module">
window.dispatched = []
window.received = []
for (const type of ${JSON.stringify(eventTypes)}) {
  document.querySelector("#hearken").addEventListener(type, (event) => window.dispatched.push({ type: event.type, detail: event.detail }))
}
import { HearkenWidget } from "${page.api}/widget/widget.js"; window.hearken = HearkenWidget.init({ organizationId: "org_demo", target: "#hearken"${page.token === undefined ? "" : `, token: ${JSON.stringify(page.token)}`}, onEvent: (event) => window.received.push(event), ...(${page.init ?? "{}"}) })
</script>
</main></body></html>`

/** An HTTP server on a loopback port answering every request with the HTML `handler` makes of its URL. */
export const listen = async (handler: (url: URL) => string): Promise<{ server: Server; origin: string }> => {
  const server = createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(handler(new URL(req.url ?? "/", "http://x")))
  })
  return { server, origin: `http://127.0.0.1:${await listenOnLoopback(server)}` }
}

/** A host page served at `/?api=…&lang=…&init=…&style=…` (the search parameters of `HostPage`). */
export const hostPageServer = (defaultApi: () => string) =>
  listen((url) => {
    const param = (name: string) => url.searchParams.get(name) ?? undefined
    return hostPage({ api: param("api") ?? defaultApi(), lang: param("lang"), token: param("token"), init: param("init"), style: param("style") })
  })

export interface Audit {
  readonly passed: number
  readonly violations: ReadonlyArray<string>
}

/** axe-core walks open shadow roots: the widget's shadow root alone (every rule that applies), and the whole page. */
export const audit = async (page: Page): Promise<{ widget: Audit; page: Audit }> => {
  if (!(await page.evaluate(() => "axe" in window))) await page.addScriptTag({ content: axeSource })
  return page.evaluate(async () => {
    const axe = (window as any).axe
    const summary = (result: any) => ({
      passed: result.passes.length,
      violations: result.violations.map((v: any) => `${v.impact} ${v.id}: ${v.nodes.length} node(s) ${v.nodes.map((n: any) => n.failureSummary).join(" | ")}`)
    })
    const widget = summary(await axe.run({ include: [{ fromShadowDom: ["#hearken", ".hk"] }] }))
    const page = summary(await axe.run(document))
    return { widget, page }
  })
}
