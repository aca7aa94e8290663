import { readFileSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { SignJWT } from "jose"
import { afterAll, beforeAll, expect, it } from "vitest"
import { migrate } from "../packages/server/src/sql/Database.js"
import { Collector } from "./support/collector.js"
import { createDatabase, type TestDatabase, withClient } from "./support/database.js"
import { baseFixture, fixturePost } from "./support/fixtures.js"
import { getJson, postJson, startSeededServer, type TestServer } from "./support/server.js"

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

/**
 * Where a statement reads or writes a distributed table, and whether that reference is limited
 * to one organization: an `INSERT INTO t (…)` names `organization_id` among its columns; a
 * `FROM t a`, `JOIN t a` or `UPDATE t a` has `a.organization_id` (or, without an alias,
 * `organization_id`) within the same parentheses as the reference, so that a subquery or a joined
 * table without its own filter counts as unfiltered even when another part of the statement
 * filters. A reading of the SQL, not a planner: it is strict in that a filter carried over by a
 * join (`b.id = p.board_id` with `b.organization_id = $1`) does not count, as Citus needs it
 * on each distributed table.
 */
const tableReferences = (text: string, tables: ReadonlyArray<string>) => {
  const found: Array<{ readonly table: string; readonly filtered: boolean }> = []
  const names = tables.join("|")
  for (const m of text.matchAll(new RegExp(String.raw`\bINSERT INTO (${names})\s*\(([^)]*)\)`, "gi"))) {
    found.push({ table: m[1]!, filtered: /\borganization_id\b/.test(m[2]!) })
  }
  const keywords = /^(WHERE|ON|JOIN|LEFT|RIGHT|INNER|CROSS|FULL|USING|ORDER|GROUP|LIMIT|SET|FOR|WITH|AND|OR|RETURNING|VALUES)$/i
  for (const m of text.matchAll(new RegExp(String.raw`\b(?:FROM|JOIN|UPDATE)\s+(${names})\b(?:\s+(?:AS\s+)?([a-z_][a-z0-9_]*))?`, "gi"))) {
    const alias = m[2] !== undefined && !keywords.test(m[2]) ? m[2] : undefined
    // The innermost parentheses around the reference, or the whole statement.
    let open = m.index, depth = 0
    for (; open >= 0; open--) {
      if (text[open] === ")") depth++
      else if (text[open] === "(" && depth-- === 0) break
    }
    let close = m.index
    for (depth = 0; close < text.length; close++) {
      if (text[close] === "(") depth++
      else if (text[close] === ")" && depth-- === 0) break
    }
    const scope = text.slice(open + 1, close)
    const filter = alias === undefined ? /\borganization_id\b/ : new RegExp(String.raw`\b${alias}\.organization_id\b`)
    found.push({ table: m[1]!, filtered: filter.test(scope) })
  }
  return found
}

/**
 * The references of the four routes that are not limited to one organization today, each as
 * "table in span", the span being the function the statement runs under: docs/operations.md names
 * each, and what it needs to become a router query on Citus.
 */
const notRouterYet = [
  // The changelog's sanitized HTML, keyed by the entry's id: the table gains the column.
  "update_html in Updates.page",
  // A post's webhook deliveries, keyed by event and endpoint: the table gains the column.
  "webhook_deliveries in WebhookOutbox.postCreated",
  // The board's size and the lexical postings (board-scoped lexemes through the GIN index):
  // posts by board, the organization checked on boards only.
  "posts in Suggestions.suggest"
]

/**
 * The plan's other claim: no query a visitor's request causes spans organizations, so that on
 * Citus each is a router query. The statements are read from the server's own traces (one client
 * span per statement, with its text): every statement of the four routes that names a table of
 * the plan's distributed ones also names `organization_id`, or touches only tables that gain the
 * column with the plan's migration (the plan names those statements). Suggestions run lexical here (no
 * embeddings API); the vector query is in the same repository and filters the same way. Every
 * statement the four routes send is read, and its references to distributed tables are held to
 * the rule of `tableReferences`; those that break it are exactly the plan's list.
 */
it("every statement the four routes send names organization_id when it touches a distributed table", async () => {
  const distributed = plan().filter((r) => r.placement === "distributed").map((r) => r.table)
  const collector = await Collector.start()
  const fixture = baseFixture()
  const acme = fixture.organizations[0]!
  acme.posts = [
    fixturePost("p_dark", "Dark mode", "<p>A dark theme for the dashboard at night</p>"),
    fixturePost("p_export", "Export to CSV", "<p>Download the reports as a spreadsheet</p>")
  ]
  acme.updates = [{ id: "u_1", title: "Dark mode is here", slug: "dark-mode-is-here", content: "<p>Try it</p>", publishedAt: "2026-01-10T00:00:00.000Z" }]
  let server: TestServer | undefined
  try {
    server = await startSeededServer(fixture, {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_BSP_SCHEDULE_DELAY: "100"
    })
    const token = await new SignJWT({ email: "alice@example.com" }).setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setAudience("org_acme").setIssuedAt().sign(new TextEncoder().encode("acme-current-secret-0123456789abcdef0123"))
    const post = { organizationId: "org_acme", boardId: "b_feat", title: "Dark theme please", content: "<p>for night work</p>" }
    const answers = [
      await getJson(`${server.api}/boards?organizationId=org_acme`),
      await getJson(`${server.api}/updates?organizationId=org_acme`),
      await postJson(`${server.api}/suggestions`, { organizationId: "org_acme", boardId: "b_feat", title: "Dark mode", content: "at night" }),
      await postJson(`${server.api}/feedback`, { ...post, token }),
      await postJson(`${server.api}/feedback`, { ...post, title: "Dark theme, again" }, { "idempotency-key": "sharding-plan-1" })
    ]
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200])
    expect((answers[2]!.body as Array<{ id: string }>).map((m) => m.id)).toContain("p_dark")

    const checked: Array<string> = []
    const unfiltered = new Set<string>()
    for (const answer of answers) {
      const traceId = answer.headers.get("x-trace-id")!
      await collector.waitFor(`the HTTP span of ${traceId}`, (span) => span.traceId === traceId && span.kind === 2)
      const trace = collector.trace(traceId)
      const byId = new Map(trace.map((span) => [span.spanId, span]))
      for (const span of trace) {
        const text = span.attributes["db.query.text"]
        if (text === undefined) continue
        const references = tableReferences(String(text), distributed)
        if (references.length > 0) checked.push(String(text))
        // Named by the span it runs under: the repository's or service's function.
        let parent = byId.get(span.parentSpanId ?? "")
        while (parent !== undefined && parent.name.startsWith("sql.")) parent = byId.get(parent.parentSpanId ?? "")
        const where = parent?.name ?? "?"
        for (const reference of references) if (!reference.filtered) unfiltered.add(`${reference.table} in ${where}`)
      }
    }
    // The statements that are not router queries yet, as the plan names them.
    expect([...unfiltered].sort()).toEqual([...notRouterYet].sort())
    for (const reference of notRouterYet) {
      const [table, where] = reference.split(" in ")
      expect(doc, reference).toContain(`\`${table}\` in \`${where}\``)
    }
    // Posts, boards, statuses, versions, idempotency keys, contacts and the outbox were all read or written.
    for (const table of ["posts", "boards", "statuses", "organization_versions", "idempotency_keys", "contacts", "webhook_events"]) {
      expect(checked.some((t) => new RegExp(String.raw`\b${table}\b`).test(t)), table).toBe(true)
    }
  } finally {
    await server?.close()
    await collector.close()
  }
}, 60_000)
