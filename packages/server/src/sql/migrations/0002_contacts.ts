import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  // A contact is keyed by (organization, external id) when the token carries an id,
  // else by (organization, lower-cased email): two partial unique indexes.
  yield* sql`CREATE TABLE contacts (
    id text PRIMARY KEY,
    organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    external_id text,
    email text NOT NULL,
    email_key text NOT NULL,
    name text,
    avatar_url text,
    custom_fields jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
  )`
  yield* sql`CREATE UNIQUE INDEX contacts_external_id_key ON contacts (organization_id, external_id)
    WHERE external_id IS NOT NULL`
  yield* sql`CREATE UNIQUE INDEX contacts_email_key ON contacts (organization_id, email_key)
    WHERE external_id IS NULL`

  yield* sql`CREATE TABLE companies (
    id text PRIMARY KEY,
    organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    external_id text NOT NULL,
    name text,
    custom_fields jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (organization_id, external_id)
  )`

  yield* sql`CREATE TABLE contact_companies (
    contact_id text NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    company_id text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    PRIMARY KEY (contact_id, company_id)
  )`

  yield* sql`ALTER TABLE posts ADD COLUMN contact_id text REFERENCES contacts (id) ON DELETE SET NULL`
  yield* sql`CREATE INDEX posts_contact_idx ON posts (contact_id) WHERE contact_id IS NOT NULL`
})
