/**
 * Compiles only while the plain types of `wire.ts`, which the thin client
 * publishes, are exactly what the API definition derives: each endpoint's
 * method, path, query, body, 200 answer and error bodies (with its
 * middlewares'). Type-only; the package does not ship it.
 */
import type { Schema } from "effect"
import type { HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware } from "effect/http-api"
import type { WidgetGroup } from "./Api.js"
import type { WidgetEndpoints } from "./wire.js"

type Widget = HttpApiGroup.Endpoints<typeof WidgetGroup>
type Endpoint<Id extends string> = HttpApiEndpoint.WithIdentifier<Widget, Id>

/** The schema an endpoint declared, under the JSON or query-string codec HttpApi wraps it in. */
type Declared<T> = T extends Schema.toCodecJson<infer S> ? S : T extends Schema.toCodecStringTree<infer S> ? S : T
type EncodedOf<T> = [T] extends [never] ? never : Declared<T> extends { readonly Encoded: infer E } ? E : never

type Derived = {
  readonly [Id in HttpApiEndpoint.Identifier<Widget>]: {
    readonly method: Endpoint<Id>["method"]
    readonly path: Endpoint<Id>["path"]
    readonly query: EncodedOf<Endpoint<Id>["~Query"]>
    readonly payload: EncodedOf<Endpoint<Id>["~Payload"]>
    readonly success: EncodedOf<Endpoint<Id>["~Success"]>
    readonly error:
      | EncodedOf<Endpoint<Id>["~Error"]>
      | EncodedOf<HttpApiMiddleware.ErrorSchema<Endpoint<Id>["~Middleware"]>>
  }
}

/** Exact equality, readonly and optional modifiers included. */
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false
type Check<Id extends keyof Derived & keyof WidgetEndpoints> = {
  readonly [K in keyof Derived[Id]]: Equals<Derived[Id][K], WidgetEndpoints[Id][K & keyof WidgetEndpoints[Id]]>
}

export type WireMatchesDefinition = [
  Equals<keyof Derived, keyof WidgetEndpoints>,
  Check<"boards">,
  Check<"updates">,
  Check<"suggestions">,
  Check<"feedback">
]
const proof: WireMatchesDefinition = [
  true,
  { method: true, path: true, query: true, payload: true, success: true, error: true },
  { method: true, path: true, query: true, payload: true, success: true, error: true },
  { method: true, path: true, query: true, payload: true, success: true, error: true },
  { method: true, path: true, query: true, payload: true, success: true, error: true }
]
void proof
