import { readFileSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, expect, it } from "vitest"
import { migrate } from "../packages/server/dist/sql/Database.js"
import { createDatabase, type TestDatabase, withClient } from "./support/database.js"

/**
 * docs/operations.md, "Sharding by organization on Citus": its table of tables is checked against
 * the schema the migrations make, so that the plan cannot drift from the tables. Citus distributes
 * a table by one column and requires every primary key and unique constraint of a distributed table
 * to include it, and every foreign key between two distributed tables too (a foreign key to a
 * reference table may be anything). So, for the distribution column `organization_id`:
 * - every table is named once, as distributed, reference or local;
 * - a distributed table "has `organization_id`" exactly when its schema has the column;
 * - the keys listed as needing `organization_id` are exactly those of the schema that lack it
 *   (primary keys, unique constraints, and foreign keys to distributed tables).
 * Citus itself is not packaged for Debian 12 and cannot be installed here: what can be checked
 * without it is that the plan names the schema as it is.
 */

const doc = readFileSync(join(import.meta.dirname, "..", "docs", "operations.md"), "utf8")

let database: TestDatabase
beforeAll(async () => {
  database = await createDatabase()
  await withClient(database.url, (sql) => Effect.provideService(migrate, SqlClient.SqlClient, sql))
}, 60_000)
afterAll(() => database?.drop())

interface Row {
  readonly table: string
  readonly placement: string
  readonly hasColumn: string
  readonly keys: string
}

/** The plan's table: `| \`table\` | placement | has organization_id | keys … |` rows under its heading. */
const plan = (): ReadonlyArray<Row> => {
  const section = doc.split(/^### Sharding by organization on Citus$/m)[1]?.split(/^##+ /m)[0]
  if (section === undefined) throw new Error("docs/operations.md has no section \"Sharding by organization on Citus\"")
  return [...section.matchAll(/^\| `(\w+)` \| (\w+) \| ([^|]+) \| ([^|]*) \|$/gm)].map((m) => ({
    table: m[1]!,
    placement: m[2]!,
    hasColumn: m[3]!.trim(),
    keys: m[4]!.trim()
  }))
}

it("the Citus plan names every table once, and each key that must gain organization_id, as the schema has them", async () => {
  const rows = plan()
  const placement = new Map(rows.map((r) => [r.table, r.placement]))
  expect(rows.length, "each table once").toBe(placement.size)
  expect([...new Set(rows.map((r) => r.placement))].every((p) => ["distributed", "reference", "local"].includes(p))).toBe(true)

  const tables = await database.query<{ name: string; hasColumn: boolean }>((sql) =>
    sql`SELECT c.relname AS name,
          EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'organization_id' AND NOT a.attisdropped) AS "hasColumn"
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY c.relname`
  )
  expect([...placement.keys()].sort()).toEqual(tables.map((t) => t.name))

  const constraints = await database.query<{ table: string; kind: string; columns: string; target: string | null; ordinal: number }>((sql) =>
    sql`SELECT c.conrelid::regclass::text AS table, c.contype AS kind, c.confrelid::regclass::text AS target,
          (SELECT string_agg(a.attname, ', ' ORDER BY k.i) FROM unnest(c.conkey) WITH ORDINALITY k(attnum, i)
             JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum) AS columns,
          CASE c.contype WHEN 'p' THEN 0 WHEN 'u' THEN 1 ELSE 2 END AS ordinal
        FROM pg_constraint c
        WHERE c.connamespace = 'public'::regnamespace AND c.contype IN ('p', 'u', 'f')`
  )
  const expected = tables.map(({ hasColumn, name }) => {
    const lacking = constraints
      .filter((c) => c.table === name && !c.columns.split(", ").includes("organization_id"))
      .filter((c) => c.kind !== "f" || placement.get(c.target!) === "distributed")
      .sort((a, b) => a.ordinal - b.ordinal || a.columns.localeCompare(b.columns))
      .map((c) => c.kind === "p" ? `primary key (${c.columns})` : c.kind === "u" ? `unique (${c.columns})` : `foreign key (${c.columns}) → \`${c.target}\``)
    const distributed = placement.get(name) === "distributed"
    return {
      table: name,
      placement: placement.get(name)!,
      hasColumn: hasColumn ? "yes" : distributed ? "no: add it" : "no",
      keys: distributed ? lacking.join("; ") : ""
    }
  })
  expect(rows.slice().sort((a, b) => a.table.localeCompare(b.table))).toEqual(expected)
  // Reference and local tables are the ones without the column: organizations itself, and the migrator's.
  expect(rows.filter((r) => r.placement !== "distributed").map((r) => r.table).sort()).toEqual(["effect_sql_migrations", "organizations"])
}, 60_000)
