import { Config, Context, type Duration, Option, Schema, SchemaTransformation } from "effect"
import { HttpUrl, Integer, ListenAddress, Port } from "./schemas.js"

// The public listener and what reaches it (`App.ts`, `http/`, `docs/`, `widget/`): PORT, HOST, the
// origins, the proxy hops, and the limits on a connection.

/** What `Origin` refuses, in words: a start-up line names the variable and the value after it. */
const originWords = "an http(s) origin: scheme, host and optional port, one origin (not a list), " +
  "without a path, query, fragment or user name (e.g. https://feedback.example.com)"

/**
 * One origin: scheme, host and port, nothing after them but an optional `/`.
 * (`https://a.com,https://b.com` parses as a URL whose host is `a.com,https`:
 * a list written as one value is refused, not read as a wrong origin.) User
 * info, a path, a query or a fragment mean nothing in an origin: refused
 * (issue 29), where they were once dropped. `message` is for a value that is
 * no http(s) URL at all.
 */
const Origin = (message: string) =>
  HttpUrl(message, originWords).check(Schema.makeFilter((url) => url.href === url.origin || url.href === `${url.origin}/`, {
    message: originWords
  }))

/**
 * A domain name such as example.com, lower-cased and without leading or trailing dots. (Effect's
 * `Schema.DomainNameFromString` keeps a trailing dot and refuses all-numeric names; this did not.)
 */
const DomainName = Schema.String.pipe(Schema.decodeTo(
  Schema.String.check(Schema.isPattern(
    /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/,
    { message: "a domain name such as example.com" }
  )),
  SchemaTransformation.transform({ decode: (value) => value.toLowerCase().replace(/^\.+|\.+$/g, ""), encode: (name) => name })
))

/**
 * CSP `frame-ancestors` sources, separated by spaces: `*`, `'self'`, `'none'`
 * (alone), a scheme (`https:`) or a host (`https://*.example.com`,
 * `shop.example:8443`). A comma or a semicolon is refused: a list written as
 * `a.com,b.com` would silently be one source, or start a second directive.
 */
const frameSource = /^(\*|'self'|[a-z][a-z0-9+.-]*:|([a-z][a-z0-9+.-]*:\/\/)?(\*\.)?[a-z0-9-]+(\.[a-z0-9-]+)*(:(\d{1,5}|\*))?)$/i
const FrameAncestors = Schema.String.check(Schema.makeFilter((value) => {
  const sources = value.trim().split(/\s+/)
  return sources.join(" ") === "'none'" || sources.every((source) => frameSource.test(source))
}, { message: "CSP frame-ancestors sources separated by spaces, e.g. * or https://shop.example https://*.shop.example, or 'none'" })).pipe(
  Schema.decodeTo(Schema.String, SchemaTransformation.transform({ decode: (value) => value.trim().split(/\s+/).join(" "), encode: (value) => value }))
)

export const port = Config.schema(Port, "PORT").pipe(Config.withDefault(3000))

export const host = Config.schema(ListenAddress, "HOST").pipe(Config.withDefault("0.0.0.0"))

/**
 * `HTTP_STALL_TIMEOUT_MS`: a connection on which nothing moves, either way, for this long is closed.
 * The stall timer also runs while a request is handled (nothing moves on its socket then): it must
 * outlast what one request may wait on (`handlingMs`), or a slow request would lose its answer.
 */
export const httpStallTimeoutMs = (handlingMs: number) =>
  Config.schema(
    Integer(
      Math.max(1000, handlingMs + 1),
      600_000,
      `a number of milliseconds of at least 1000, more than DATABASE_STATEMENT_TIMEOUT_MS + EMBEDDINGS_TIMEOUT_MS (${handlingMs}), and at most 600000`
    ),
    "HTTP_STALL_TIMEOUT_MS"
  ).pipe(Config.withDefault(Math.max(60_000, handlingMs + 1)))

/** The API's own origin (CORS, the OpenAPI `servers` entry): Hearken serves from `/`, so a path would be a lie. */
export const publicUrl = Config.option(Config.schema(Origin("an http(s) URL"), "PUBLIC_URL"))

export const dashboardOrigin = Config.option(Config.schema(Origin(originWords), "DASHBOARD_ORIGIN")).pipe(
  Config.map(Option.map((url) => url.origin))
)

export const rootDomain = Config.option(Config.schema(DomainName, "ROOT_DOMAIN"))

/** Who may frame the widget's page `/widget/frame` (its CSP's `frame-ancestors`); any site by default. */
export const widgetFrameAncestors = Config.schema(FrameAncestors, "WIDGET_FRAME_ANCESTORS").pipe(Config.withDefault("*"))

export const trustProxy = Config.schema(Integer(0, 32, "an integer between 0 and 32"), "TRUST_PROXY").pipe(Config.withDefault(0))

/** Open sockets per client address (`http/ConnectionCap.ts`); 0 is no cap. Unset: 256, or 0 behind a proxy (`TRUST_PROXY`). */
export const maxConnectionsPerAddress = Config.option(
  Config.schema(Integer(0, 1_000_000, "an integer between 0 and 1000000 (0: no cap)"), "MAX_CONNECTIONS_PER_ADDRESS")
)

/**
 * The listener's fixed limits (no variables): a public API should not hold sockets for slow
 * clients, so headers come within 10 s and the whole request within 30 s (decision 0022); an
 * idle kept-alive socket closes after 5 s; a stop waits 10 s for answers in flight.
 */
export const serverLimits = {
  keepAliveTimeoutMs: 5_000,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  /** How often Node checks the two timeouts above. */
  connectionsCheckingIntervalMs: 2_000,
  gracefulShutdownTimeout: "10 seconds"
} as const satisfies Record<string, number | Duration.Input>

/** The public listener's settings: `App.ts`, CORS (`http/Edge.ts`), the client's address (`rate-limit/http.ts`), `/docs`, the widget. */
export interface HttpConfigShape {
  readonly port: number
  readonly host: string
  /** `PUBLIC_URL`, or `http://localhost:PORT`. */
  readonly publicUrl: URL
  /** `PUBLIC_URL` as given, none when unset: the OpenAPI document's `servers` (`docs/page.ts`, decision 0035). */
  readonly publicUrlGiven: Option.Option<URL>
  readonly dashboardOrigin: Option.Option<string>
  readonly rootDomain: Option.Option<string>
  readonly widgetFrameAncestors: string
  readonly trustProxy: number
  readonly maxConnectionsPerAddress: number
  readonly httpStallTimeoutMs: number
  readonly keepAliveTimeoutMs: number
  readonly headersTimeoutMs: number
  readonly requestTimeoutMs: number
  readonly connectionsCheckingIntervalMs: number
  readonly gracefulShutdownTimeout: Duration.Input
}

export class HttpConfig extends Context.Service<HttpConfig, HttpConfigShape>()("hearken/HttpConfig") {}
