import { DataValidationError, InternalServerError } from "@hearken/api/effect"
import { type IncomingMessage, type Server, type ServerResponse, STATUS_CODES } from "node:http"
import type { Duplex } from "node:stream"
import * as ErrorBodies from "../edge/ErrorBodies.js"

/**
 * What Node's HTTP layer answers by itself, before any Effect handler runs,
 * answered with the same JSON error bodies as the rest of the API. Node's own
 * answers have empty bodies, which a client cannot tell from a broken proxy.
 *
 * The status stays Node's (400, 408, 413, 431, 417): it is the accurate one
 * and what proxies and clients expect. The body is the API's error schema
 * encoded (`ErrorBodies.ts`): `DataValidationError` for anything the client
 * sent wrong, and `InternalServerError` (503) when no handler is attached yet
 * or any more.
 */
const refusal = (message: string) => ErrorBodies.json(ErrorBodies.bodyOf(new DataValidationError({ message })))
const unavailable = (message: string) => ErrorBodies.json(ErrorBodies.bodyOf(new InternalServerError({ message })))

/** The 503 message of a server that is stopping, here and in `Drain.ts`. */
export const shuttingDownMessage = "shutting down; retry shortly"

/** Node's parser error codes that are worth naming; anything else is a malformed request. */
const parserErrors: Record<string, { readonly status: number; readonly message: string }> = {
  HPE_HEADER_OVERFLOW: { status: 431, message: "headers: larger than 16 KiB" },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: { status: 413, message: "body: chunk extensions too large" },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, message: "request: not received in time" },
  HPE_INVALID_CONTENT_LENGTH: { status: 400, message: "Content-Length: invalid" },
  // A second `Content-Length`, equal to the first or not. llhttp gives the same code to `Content-Length`
  // after `Transfer-Encoding`, which `describeError` tells apart by its `reason` first.
  HPE_UNEXPECTED_CONTENT_LENGTH: { status: 400, message: "Content-Length: duplicate" },
  HPE_INVALID_TRANSFER_ENCODING: { status: 400, message: "Transfer-Encoding: invalid" },
  HPE_INVALID_CHUNK_SIZE: { status: 400, message: "body: malformed chunked encoding" },
  HPE_INVALID_METHOD: { status: 400, message: "request line: invalid method" },
  HPE_INVALID_URL: { status: 400, message: "request line: invalid target" },
  HPE_INVALID_VERSION: { status: 400, message: "request line: invalid HTTP version" },
  HPE_INVALID_HEADER_TOKEN: { status: 400, message: "headers: malformed header" }
}
const malformed = { status: 400, message: "request: malformed HTTP" }

/**
 * Both framing headers in one request (request smuggling) come under the code
 * of whichever header came second, which alone would read "invalid"; llhttp's
 * `reason` names the pair, e.g. "Content-Length can't be present with Transfer-Encoding".
 */
const framingConflict = /^(Content-Length|Transfer-Encoding) can't be present with (Content-Length|Transfer-Encoding)$/

const describeError = (error: NodeJS.ErrnoException & { readonly reason?: unknown }) => {
  const conflict = typeof error.reason === "string" ? framingConflict.exec(error.reason) : null
  if (conflict !== null) return { status: 400, message: `${conflict[1]}: not allowed with ${conflict[2]}` }
  return parserErrors[error.code ?? ""] ?? malformed
}

const rawResponse = (status: number, body: string, headers: Record<string, string>) => {
  const bytes = Buffer.from(body)
  const extra = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join("")
  return Buffer.concat([
    Buffer.from(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
        "Content-Type: application/json\r\n" +
        `Content-Length: ${bytes.length}\r\n` +
        `Connection: close\r\n${extra}\r\n`,
      "latin1"
    ),
    bytes
  ])
}

/** How long a socket stays open after an error answer, so the client reads it before the close. */
const lingerMs = 2_000

/**
 * Ends the connection with a JSON `DataValidationError` as its last answer (or
 * none), written to the socket by hand since there is no response object.
 */
const endWith = (socket: Duplex, answer?: { readonly status: number; readonly message: string }, headers: Record<string, string> = {}) => {
  // `end` rather than Node's write-then-destroy: a close with unread request bytes (the rest of an
  // oversized header) sends a reset that makes the client drop the answer before reading it.
  if (answer === undefined) socket.end()
  else socket.end(rawResponse(answer.status, refusal(answer.message), headers))
  const linger = setTimeout(() => socket.destroy(), lingerMs).unref()
  socket.once("close", () => clearTimeout(linger))
}

/** Node's private handle on the response being written to the socket (the first of pipelined ones); no public API exposes it. */
const inFlight = (socket: Duplex) => (socket as { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined

/**
 * Calls `answer` once the requests before the faulty bytes are answered.
 * Requests received whole before the fault (pipelined in the same packet) are
 * being handled: their answers go first, in order (Node queues them and hands
 * the socket to each in turn), so their work is neither lost nor unanswered.
 * A request not received whole is the one the fault broke: the error is its
 * answer, unless its handler has started another, after which the connection
 * just closes.
 */
const afterInFlight = (socket: Duplex, answer: () => void) => {
  const response = inFlight(socket)
  if (response === undefined) return answer()
  const whole = response.req.complete
  if (!whole && !response.headersSent) return answer()
  response.once("close", () => (whole ? afterInFlight(socket, answer) : endWith(socket)))
}

/**
 * `clientError`: a parse error, a header block over `maxHeaderSize`, or a
 * request or header timeout. The error answer follows those of the requests
 * before it, with Node's own care: nothing is written to a socket that is
 * reset or no longer writable (the last answer asked for a close), and never
 * a second status line inside a response.
 */
const onClientError = (answered: WeakSet<Duplex>) => (error: NodeJS.ErrnoException, socket: Duplex) => {
  // Node reports the same error again for every chunk that arrives after it: answer once.
  if (answered.has(socket)) return
  answered.add(socket)
  if (error.code === "ECONNRESET" || error.code === "EPIPE") {
    socket.destroy()
    return
  }
  afterInFlight(socket, () => (socket.writable ? endWith(socket, describeError(error)) : socket.destroy()))
}

/** What the routes answer (`OPTIONS` for CORS preflights). */
const allowedMethods = "GET, HEAD, POST, OPTIONS"

/**
 * `connect`: Node hands a `CONNECT` request over as a bare socket and, with no
 * listener, destroys it unanswered. This is no proxy: 405, naming what is allowed.
 */
const onConnect = (_request: IncomingMessage, socket: Duplex) => {
  // Node no longer listens for errors on a socket it hands over: a reset nobody hears would crash the process.
  socket.on("error", () => {})
  endWith(socket, { status: 405, message: "method: CONNECT is not allowed" }, { Allow: allowedMethods })
}

/**
 * `checkExpectation`: an `Expect` other than `100-continue`, which Node would
 * refuse with an empty 417. The body is unread, so the connection closes.
 */
const onCheckExpectation = (_request: IncomingMessage, response: ServerResponse) => {
  const body = refusal("Expect: only 100-continue is supported")
  response.writeHead(417, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    connection: "close"
  })
  response.end(body)
}

/**
 * The first `request` listener. The Effect handler is attached once the
 * routes are built and detached at shutdown; a request that finds no other
 * listener would never be answered, so this one answers it with a 503 the
 * client may retry. With the handler attached it does nothing.
 */
const notServing = (server: Server) => (_request: IncomingMessage, response: ServerResponse) => {
  // Itself, and listeners that only set a header (`Drain.ts`), are not a handler. Counted, not listed: every request comes here.
  const handlers = server.listenerCount("request") - 1 - (auxiliaries.get(server) ?? 0)
  if (handlers > 0 || response.headersSent) return
  answerUnavailable(response, server.listening ? "starting up; retry shortly" : shuttingDownMessage)
}

/**
 * The JSON 503 a client may retry, written to a Node response by hand: here
 * when no handler is attached, and by `Drain.ts` for a request still running
 * when the grace period ends.
 */
export const answerUnavailable = (response: ServerResponse, message: string) => {
  const body = unavailable(message)
  response.writeHead(503, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    "retry-after": "1",
    connection: "close"
  })
  response.end(body)
}

type RequestListener = (request: IncomingMessage, response: ServerResponse) => void

/** How many auxiliary `request` listeners each server has. */
const auxiliaries = new WeakMap<Server, number>()

/**
 * Adds a `request` listener that answers nothing itself (it sets a header,
 * say) ahead of the others: `notServing` still answers while no handler is
 * attached, which it tells by counting the listeners that are not such.
 */
export const prependAuxiliaryRequestListener = (server: Server, listener: RequestListener) => {
  auxiliaries.set(server, (auxiliaries.get(server) ?? 0) + 1)
  server.prependListener("request", listener)
}

/** Installs the JSON answers on a fresh `node:http` server, before it listens. */
export const install = <S extends Server>(server: S): S => {
  server.on("clientError", onClientError(new WeakSet()))
  server.on("connect", onConnect)
  server.on("checkExpectation", onCheckExpectation)
  server.prependListener("request", notServing(server))
  return server
}
