import { Config, Schema, SchemaTransformation } from "effect"
import { isIP } from "node:net"

// What a value may be, shared by the slices. Each schema's checks carry, as their `message`, what the
// variable must be; `invalidConfig` (`InvalidConfig.ts`) adds the variable's name and the value given.

/** A number written with `pattern`'s digits, from `minimum` to `maximum`; either failing reads `message`. */
const digits = (pattern: RegExp) => (minimum: number, maximum: number, message: string) =>
  Schema.String.check(Schema.isPattern(pattern, { message })).pipe(
    Schema.decodeTo(Schema.Number.check(Schema.isBetween({ minimum, maximum }, { message })), SchemaTransformation.numberFromString)
  )

/** Digits only, as Hearken has always read them (Effect's own number decoding would also take `+80`, `1e3` and `80.0`). */
export const Integer = digits(/^\d+$/)

export const Decimal = digits(/^\d+(\.\d+)?$/)

export const Milliseconds = (maximum: number, message = `a number of milliseconds between 1 and ${maximum}`) => Integer(1, maximum, message)

/** 0 to 65535: PORT=0 picks a free port, and `Config.Port` refuses 0. */
export const Port = Integer(0, 65535, "a port number between 0 and 65535")

/** A DNS name: labels of letters, digits, `-` and `_` (as container and service names have), dot-separated, an optional final dot. */
const dnsName = /^(?=[^.].{0,252}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/i

/**
 * One host as a parsed URL holds it: a DNS name, an IPv4 address, or an IPv6 address in brackets.
 * (`https://a.com,https://b.com` parses with the host `a.com,https`, and `redis://a,b:6379` with
 * `a,b`: a list written as one value is refused here, not read as a wrong host.)
 */
export const isOneHost = (hostname: string): boolean => {
  const bracketed = /^\[(.*)\]$/.exec(hostname)
  if (bracketed !== null) return isIP(bracketed[1]!) === 6
  if (/^[0-9.]+$/.test(hostname)) return isIP(hostname) === 4
  return dnsName.test(hostname)
}

/** What a URL's host must be, in words: added to a URL variable's `message` (`UrlString`). */
const oneHostWords = "with one host: a DNS name, an IPv4 address or an IPv6 address in brackets (not a list, no spaces or commas)"

/**
 * A URL with one of `protocols` and one host (`isOneHost`), kept as written (a secret's stays a
 * string). `message` is for a value that is no such URL, `hostMessage` for one whose host is not
 * one host. `socketHost`: a percent-encoded socket directory is a host too (`postgres://%2Frun%2Fpostgresql/db`).
 */
export const UrlString = (protocols: ReadonlyArray<string>, message: string, options: {
  readonly hostMessage?: string
  readonly socketHost?: boolean
} = {}) =>
  Schema.String.check(Schema.makeFilter((value) => {
    if (!URL.canParse(value)) return message
    const url = new URL(value)
    if (!protocols.includes(url.protocol) || url.hostname === "") return message
    if (isOneHost(url.hostname) || (options.socketHost === true && /^%2F[^,\s]*$/i.test(url.hostname))) return undefined
    return options.hostMessage ?? `${message} ${oneHostWords}`
  }))

export const HttpUrl = (message: string, hostMessage?: string) =>
  UrlString(["http:", "https:"], message, hostMessage === undefined ? {} : { hostMessage }).pipe(
    Schema.decodeTo(Schema.URL, SchemaTransformation.urlFromString)
  )

/** No query and no fragment: where a path is appended (`/v1/traces`, `/embeddings`), they would be sent or lost. */
const withoutQuery = (message: string) =>
  Schema.URL.check(Schema.makeFilter((url) => url.search === "" && url.hash === "", { message }))

/**
 * An address to listen on: an IP address (IPv6 with or without brackets) or a host name, with
 * no scheme, port or path (`HOST`, `METRICS_HOST`).
 */
export const ListenAddress = Schema.String.check(Schema.makeFilter((value) =>
  isIP(value.replace(/^\[(.*)\]$/, "$1")) !== 0 || /^[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?$/i.test(value), {
  message: "an IP address or host name to listen on, such as 0.0.0.0, ::, 127.0.0.1 or localhost (no scheme, port or path)"
})).pipe(Schema.decodeTo(Schema.String, SchemaTransformation.transform({
  decode: (value) => value.replace(/^\[(.*)\]$/, "$1"),
  encode: (value) => value
})))

/** A name or key that goes into a header or a JSON field as it is: no spaces, no control characters. */
export const Token = (message: string) => Schema.String.check(Schema.isPattern(/^[\x21-\x7e\u00a0-\uffff]+$/, { message }))

/** No `user:password@`: where credentials go elsewhere (`fetch` refuses a URL holding them). */
const withoutUserInfo = (message: string) =>
  Schema.URL.check(Schema.makeFilter((url) => url.username === "" && url.password === "", { message }))

/**
 * A service's base URL that Hearken appends a path to and sends requests to: http(s), no
 * credentials in it (they go where `credentials` says), no query or fragment (`base` is an
 * example of what is meant).
 */
export const ServiceUrl = (credentials: string, base: string) =>
  HttpUrl("an http(s) URL").pipe(
    Schema.decodeTo(withoutUserInfo(`a URL without a user name or password (${credentials})`)),
    Schema.decodeTo(withoutQuery(`an http(s) URL without a query or fragment (${base})`))
  )

/** One of `words`, in any case, read in lower case (the `Literals` check refuses any other). */
export const Word = <const W extends string>(words: ReadonlyArray<W>, message: string) =>
  Schema.String.pipe(Schema.decodeTo(
    Schema.Literals(words).annotate({ message }),
    SchemaTransformation.transform({ decode: (value) => value.toLowerCase() as W, encode: (word) => word })
  ))

export const flag = (name: string, fallback: boolean) =>
  Config.schema(Word(["true", "1", "yes", "false", "0", "no"], "true or false"), name).pipe(
    Config.map((word) => word === "true" || word === "1" || word === "yes"),
    Config.withDefault(fallback)
  )
