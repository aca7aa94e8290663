import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE EXTENSION IF NOT EXISTS vector`
  yield* sql`CREATE EXTENSION IF NOT EXISTS pg_trgm`
  // Every timestamp the API returns: YYYY-MM-DDTHH:mm:ss.sssZ.
  yield* sql`CREATE FUNCTION iso_ms(t timestamptz) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
    $$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$`

  yield* sql`CREATE TABLE organizations (
    id text PRIMARY KEY,
    name text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
  )`

  yield* sql`CREATE TABLE organization_jwt_secrets (
    organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    position integer NOT NULL,
    secret text NOT NULL,
    PRIMARY KEY (organization_id, position)
  )`

  yield* sql`CREATE TABLE statuses (
    id text PRIMARY KEY,
    organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name text NOT NULL,
    is_default boolean NOT NULL DEFAULT false,
    position integer NOT NULL
  )`
  yield* sql`CREATE INDEX statuses_organization_idx ON statuses (organization_id, position)`

  yield* sql`CREATE TABLE boards (
    id text PRIMARY KEY,
    organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name text NOT NULL,
    slug text NOT NULL,
    visibility text NOT NULL CHECK (visibility IN ('public', 'private')),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
  )`
  yield* sql`CREATE INDEX boards_listing_idx ON boards (organization_id, created_at, id) WHERE visibility = 'public'`

  yield* sql`CREATE TABLE posts (
    id text PRIMARY KEY,
    organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    board_id text NOT NULL REFERENCES boards (id) ON DELETE CASCADE,
    title text NOT NULL,
    slug text NOT NULL,
    content text NOT NULL,
    excerpt text NOT NULL,
    visibility text NOT NULL DEFAULT 'public' CHECK (visibility IN ('public', 'private')),
    status_id text REFERENCES statuses (id) ON DELETE SET NULL,
    metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
    source text NOT NULL CHECK (source IN ('widget', 'import')),
    search tsvector GENERATED ALWAYS AS (
      setweight(to_tsvector('simple', title), 'A') || setweight(to_tsvector('simple', excerpt), 'B')
    ) STORED,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (organization_id, slug)
  )`
  yield* sql`CREATE INDEX posts_board_idx ON posts (board_id) WHERE visibility = 'public'`
  yield* sql`CREATE INDEX posts_search_idx ON posts USING gin (search)`
  yield* sql`CREATE INDEX posts_title_trgm_idx ON posts USING gin (title gin_trgm_ops)`

  yield* sql`CREATE TABLE updates (
    id text PRIMARY KEY,
    organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    title text NOT NULL,
    slug text NOT NULL,
    content text NOT NULL,
    excerpt text NOT NULL,
    image_url text,
    published_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
  )`
  yield* sql`CREATE INDEX updates_published_idx ON updates (organization_id, published_at DESC, id)
    WHERE published_at IS NOT NULL`

  yield* sql`CREATE TABLE webhook_endpoints (
    id text PRIMARY KEY,
    organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    url text NOT NULL,
    secret text NOT NULL,
    events text[] NOT NULL DEFAULT '{}'
  )`
})
