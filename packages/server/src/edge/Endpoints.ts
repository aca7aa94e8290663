import { HearkenApi } from "@hearken/api/effect"
import { HttpApi } from "effect/http-api"

/**
 * The endpoint a request is for, by name: the API's endpoint name (`boards`,
 * `feedback`, `health`, …) by method and path, read from the `HttpApi`
 * definition; `docs` and `widget` for those pages; `other` for everything else
 * (unknown routes, CORS preflights). A fixed set, so that no path a client
 * makes up becomes a metric's label (decision 0014).
 */
const apiEndpoints = (() => {
  const byRoute = new Map<string, string>()
  HttpApi.reflect(HearkenApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => byRoute.set(`${endpoint.method} ${endpoint.path}`, endpoint.identifier)
  })
  return byRoute
})()

export const endpointOf = (method: string, url: string): string => {
  const path = url.split("?", 1)[0]!
  const known = apiEndpoints.get(`${method === "HEAD" ? "GET" : method} ${path}`)
  if (known !== undefined) return known
  if (path === "/docs" || path.startsWith("/docs/")) return "docs"
  if (path === "/widget" || path.startsWith("/widget/")) return "widget"
  return "other"
}
