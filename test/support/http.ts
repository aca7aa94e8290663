import { request as httpRequest } from "node:http"

export interface RawResponse {
  readonly status: number
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly body: any
  /** Milliseconds from sending to the whole answer. */
  readonly ms: number
}

/**
 * One HTTP request from a chosen source address (anything in 127.0.0.0/8
 * works on loopback), on a fresh connection. Header values may repeat (arrays).
 */
export const send = (
  url: string,
  options: {
    readonly method?: string
    readonly body?: unknown
    readonly from?: string
    readonly headers?: Record<string, string | Array<string>>
  } = {}
): Promise<RawResponse> =>
  new Promise((resolve, reject) => {
    const started = performance.now()
    const body = options.body === undefined ? undefined : JSON.stringify(options.body)
    const req = httpRequest(url, {
      method: options.method ?? (body === undefined ? "GET" : "POST"),
      agent: false,
      ...(options.from === undefined ? {} : { localAddress: options.from }),
      headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...options.headers }
    }, (res) => {
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (chunk) => (text += chunk))
      res.on("end", () => {
        let parsed: unknown = text
        try {
          parsed = JSON.parse(text)
        } catch {
          // keep the text
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed, ms: performance.now() - started })
      })
    })
    req.on("error", reject)
    req.end(body)
  })
