import { ClientRecord, RequestString } from "@hearken/api/effect"
import { Schema } from "effect"
import { HttpUrl } from "../content/schemas.js"

/** The values of a `customFields` claim (docs/api.md: "Identity tokens"). */
const CustomFieldValue = Schema.Union([RequestString, Schema.Finite, Schema.Boolean, Schema.Null])
const CustomFields = ClientRecord(CustomFieldValue)

/** An external id: a non-empty string or a finite number, stored as its string form. */
const ExternalId = Schema.Union([
  RequestString.check(Schema.isNonEmpty(), Schema.isMaxLength(255)),
  Schema.Finite
])

/** A pragmatic address check: one `@`, no spaces, a dot in the domain. */
const Email = RequestString.check(Schema.makeFilter<string>(
  (s) => s.length <= 254 && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(s),
  { expected: "a valid email address" }
))

const Company = Schema.Struct({
  id: ExternalId,
  name: Schema.optional(RequestString),
  customFields: Schema.optional(CustomFields)
})

/** The identity claims a verified token must carry. Other claims are ignored. */
export const IdentityClaims = Schema.Struct({
  email: Email,
  id: Schema.optional(ExternalId),
  name: Schema.optional(RequestString),
  avatarUrl: Schema.optional(HttpUrl),
  customFields: Schema.optional(CustomFields),
  companies: Schema.optional(Schema.Array(Company))
})
export type IdentityClaims = typeof IdentityClaims.Type
export type CustomFields = typeof CustomFields.Type
