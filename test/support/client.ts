/**
 * The one client the tests (and benches) speak the widget API with over real
 * HTTP. Requests are typed by the API package (`@hearken/api`: its `routes`
 * and `Payload`s); answers come back whole — status, headers and the body as
 * sent (JSON parsed, else the text) — because tests assert exactly those,
 * which the thin client's `Answer` hides. Imports no server module, so that a
 * bench run by plain `node` can use it too.
 */
import { type Payload, routes } from "@hearken/api"

export interface JsonResponse {
  readonly status: number
  readonly headers: Headers
  readonly body: any
}

const toJson = async (response: Response): Promise<JsonResponse> => {
  const text = await response.text()
  let body: unknown = text
  try {
    body = text === "" ? undefined : JSON.parse(text)
  } catch {
    // not JSON: keep the text, so a test can show what came back
  }
  return { status: response.status, headers: response.headers, body }
}

export const getJson = async (url: string, headers: Record<string, string> = {}) =>
  toJson(await fetch(url, { headers }))

/** POSTs `body` (a value is JSON-encoded; a string is sent as it is). */
export const postJson = async (url: string, body: unknown, headers: Record<string, string> = {}) =>
  toJson(
    await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body)
    })
  )

/** A server to speak to: its origin (`http://127.0.0.1:PORT`), or anything that has one (a test server, a process). */
export type Target = string | { readonly origin: string }

/**
 * The widget endpoints of `target`, typed by the API: a body of the wrong
 * shape does not compile. Each call is one request; headers are sent as given.
 */
export const widgetClient = (target: Target) => {
  const origin = () => typeof target === "string" ? target : target.origin
  return {
    suggest: (body: Payload<"suggestions">, headers: Record<string, string> = {}) =>
      postJson(`${origin()}${routes.suggestions.path}`, body, headers),
    feedback: (body: Payload<"feedback">, headers: Record<string, string> = {}) =>
      postJson(`${origin()}${routes.feedback.path}`, body, headers)
  }
}

/** The post ids of a `POST /suggestions` answer, in its order. */
export const ids = (res: { readonly body: ReadonlyArray<{ readonly id: string }> }) => res.body.map((m) => m.id)
