import { UnauthorizedError } from "@hearken/api/effect"
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { decodeProtectedHeader, jwtVerify, type JWTPayload } from "jose"
import { describeIssue } from "../edge/SchemaIssues.js"
import { IdentityClaims } from "./Claims.js"
import { OrganizationSecrets } from "./OrganizationSecrets.js"

/** Seconds of clock skew tolerated on `exp`, `nbf` and `iat`. */
export const clockToleranceSeconds = 60

const refuse = (reason: string) => new UnauthorizedError({ message: `token: ${reason}` })

const encoder = new TextEncoder()

/** jose's error codes, mapped to what an integrator can act on, and nothing more. */
const reasonOf = (error: unknown): string => {
  const { code, claim } = (error ?? {}) as { code?: string; claim?: string }
  switch (code) {
    case "ERR_JWT_EXPIRED":
      return "expired"
    case "ERR_JWT_CLAIM_VALIDATION_FAILED":
      return claim === "aud" ? "audience must be the organizationId" : claim === "nbf" ? "not valid yet" : `invalid ${claim ?? "claims"}`
    case "ERR_JOSE_ALG_NOT_ALLOWED":
      return "only HS256 is accepted"
    default:
      return "malformed"
  }
}

/** `exp` and `nbf` are checked against the `Clock`, as `iat` is. */
const verifyWith = (token: string, secret: string, organizationId: string) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.tryPromise({
      try: () =>
        jwtVerify(token, encoder.encode(secret), {
          algorithms: ["HS256"],
          audience: organizationId,
          clockTolerance: clockToleranceSeconds,
          currentDate: new Date(now)
        }),
      catch: (error) => error
    }))

const isBadSignature = (error: unknown) =>
  (error as { code?: string } | null)?.code === "ERR_JWS_SIGNATURE_VERIFICATION_FAILED"

export class IdentityTokens extends Context.Service<IdentityTokens, {
  /** Verifies an HS256 identity token for the organization and yields its claims. */
  readonly verify: (organizationId: string, token: string) => Effect.Effect<IdentityClaims, UnauthorizedError>
}>()("hearken/IdentityTokens") {
  /** Needs `OrganizationSecrets`. */
  static readonly layerNoDeps = Layer.effect(
    IdentityTokens,
    Effect.gen(function*() {
      const secrets = yield* OrganizationSecrets

      const verify = Effect.fn("IdentityTokens.verify")(function*(organizationId: string, token: string) {
        const header = yield* Effect.try({ try: () => decodeProtectedHeader(token), catch: () => refuse("malformed") })
        if (header.alg !== "HS256") return yield* refuse("only HS256 is accepted")
        const accepted = yield* secrets.list(organizationId)
        if (accepted.length === 0) return yield* refuse("this organization accepts no identity tokens")

        // Each secret in turn (rotation). jose checks the signature before the claims,
        // so a claim failure means the secret matched: stop there.
        let payload: JWTPayload | undefined
        for (const secret of accepted) {
          const result = yield* Effect.result(verifyWith(token, secret, organizationId))
          if (result._tag === "Success") {
            payload = result.success.payload
            break
          }
          if (!isBadSignature(result.failure)) return yield* refuse(reasonOf(result.failure))
        }
        if (payload === undefined) return yield* refuse("signature does not match")

        const nowSeconds = (yield* Clock.currentTimeMillis) / 1000
        if (typeof payload.iat === "number" && payload.iat > nowSeconds + clockToleranceSeconds) {
          return yield* refuse("issued in the future")
        }
        return yield* Schema.decodeUnknownEffect(IdentityClaims)(payload).pipe(
          Effect.mapError((error) => refuse(`claims: ${describeIssue(error.issue, "payload")}`))
        )
      })

      return IdentityTokens.of({ verify })
    })
  )

  static readonly layer = this.layerNoDeps.pipe(Layer.provide(OrganizationSecrets.layer))
}
