import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { randomUUID } from "node:crypto"
import { orDie } from "../sql/SqlFailure.js"
import type { IdentityClaims } from "./Claims.js"

const Id = Schema.Struct({ id: Schema.String })

const externalId = (id: string | number | undefined) => id === undefined ? null : String(id)

export class Contacts extends Context.Service<Contacts, {
  /**
   * Upserts the contact of verified claims, and its companies, and yields the
   * contact's id. Concurrent first submissions of one person converge on one
   * row (`INSERT … ON CONFLICT`). Runs inside the caller's transaction.
   */
  readonly upsert: (organizationId: string, claims: IdentityClaims) => Effect.Effect<string>
}>()("hearken/Contacts") {
  static readonly layer = Layer.effect(
    Contacts,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      /** Always one row: inserted, or the one it conflicts with, updated. */
      const contactRow = SqlSchema.findAll({
        Request: Schema.Struct({
          id: Schema.String,
          organizationId: Schema.String,
          externalId: Schema.NullOr(Schema.String),
          email: Schema.String,
          name: Schema.NullOr(Schema.String),
          avatarUrl: Schema.NullOr(Schema.String),
          /** The custom fields as their JSON. */
          customFields: Schema.String
        }),
        Result: Id,
        execute: (contact) => {
          const values = sql`(${contact.id}, ${contact.organizationId}, ${contact.externalId}, ${contact.email},
            ${contact.email.toLowerCase()}, ${contact.name}, ${contact.avatarUrl}, ${contact.customFields}::jsonb)`
          const update = sql`DO UPDATE SET email = EXCLUDED.email, email_key = EXCLUDED.email_key,
            name = COALESCE(EXCLUDED.name, contacts.name), avatar_url = COALESCE(EXCLUDED.avatar_url, contacts.avatar_url),
            custom_fields = contacts.custom_fields || EXCLUDED.custom_fields, updated_at = now()`
          return contact.externalId === null
            ? sql`INSERT INTO contacts
                (id, organization_id, external_id, email, email_key, name, avatar_url, custom_fields) VALUES ${values}
                ON CONFLICT (organization_id, email_key) WHERE external_id IS NULL ${update} RETURNING id`
            : sql`INSERT INTO contacts
                (id, organization_id, external_id, email, email_key, name, avatar_url, custom_fields) VALUES ${values}
                ON CONFLICT (organization_id, external_id) WHERE external_id IS NOT NULL ${update} RETURNING id`
        }
      })

      const upsertContact = (organizationId: string, claims: IdentityClaims) =>
        contactRow({
          id: randomUUID(),
          organizationId,
          externalId: externalId(claims.id),
          email: claims.email,
          name: claims.name ?? null,
          avatarUrl: claims.avatarUrl ?? null,
          customFields: JSON.stringify(claims.customFields ?? {})
        }).pipe(Effect.map((rows) => rows[0]!.id))

      /** Always one row, as for contacts. */
      const companyRow = SqlSchema.findAll({
        Request: Schema.Struct({
          id: Schema.String,
          organizationId: Schema.String,
          externalId: Schema.String,
          name: Schema.NullOr(Schema.String),
          customFields: Schema.String
        }),
        Result: Id,
        execute: (company) =>
          sql`INSERT INTO companies (id, organization_id, external_id, name, custom_fields)
            VALUES (${company.id}, ${company.organizationId}, ${company.externalId}, ${company.name},
              ${company.customFields}::jsonb)
            ON CONFLICT (organization_id, external_id) DO UPDATE SET name = COALESCE(EXCLUDED.name, companies.name),
              custom_fields = companies.custom_fields || EXCLUDED.custom_fields, updated_at = now()
            RETURNING id`
      })

      const upsertCompany = (organizationId: string, company: NonNullable<IdentityClaims["companies"]>[number]) =>
        companyRow({
          id: randomUUID(),
          organizationId,
          externalId: String(company.id),
          name: company.name ?? null,
          customFields: JSON.stringify(company.customFields ?? {})
        }).pipe(Effect.map((rows) => rows[0]!.id))

      const upsert = Effect.fn("Contacts.upsert")(function*(organizationId: string, claims: IdentityClaims) {
        const contactId = yield* upsertContact(organizationId, claims)
        // One entry per company id (the last wins), in a fixed order so that
        // concurrent transactions lock company rows in the same order.
        const companies = [...new Map((claims.companies ?? []).map((c) => [String(c.id), c])).values()]
          .sort((a, b) => String(a.id).localeCompare(String(b.id)))
        for (const company of companies) {
          const companyId = yield* upsertCompany(organizationId, company)
          yield* sql`INSERT INTO contact_companies (contact_id, company_id) VALUES (${contactId}, ${companyId})
            ON CONFLICT DO NOTHING`
        }
        return contactId
      }, orDie)

      return Contacts.of({ upsert })
    })
  )
}
