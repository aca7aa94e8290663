import { chromium } from "playwright-core"

/** Hosts the browser may reach: loopback only (Chromium resolves `*.localhost` to loopback itself). */
const reachable = ["127.0.0.1", "localhost", "*.localhost"]

/**
 * Host names that stand for other sites, resolved to loopback: an origin no
 * API setting allows (`www.shop-example.test`, `evil.test`), as a customer's
 * shop on its own domain would be.
 */
export const otherSites = "*.test"

/**
 * Debian's Chromium, headless, cut off from every other host by its own
 * resolver rules, not by request interception: with any `page.route`,
 * Playwright intercepts every request and answers CORS preflights itself, so
 * a preflight the server refuses never fails a test (decision 0015).
 * A request to an outside host fails as a DNS error, and `page.on("request")`
 * still sees it.
 */
export const launchChromium = () =>
  chromium.launch({
    executablePath: process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium",
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      `--host-resolver-rules=MAP ${otherSites} 127.0.0.1, MAP * ~NOTFOUND, ${reachable.map((host) => `EXCLUDE ${host}`).join(", ")}`
    ]
  })
