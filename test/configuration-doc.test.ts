import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { ConfigProvider, Effect } from "effect"
import { describe, expect, it } from "vitest"
import { configVariables, loadServerConfig } from "../packages/server/src/config/ServerConfig.js"

/**
 * docs/configuration.md cannot drift from the configuration: its tables name exactly the
 * variables the server reads (`configVariables`, collected from the definition itself, and
 * `packages/server/src/config/` names no other), and a default written as a value (a code span
 * first in its cell) is the server's: the configuration read with the variable set to it is the
 * configuration read with nothing set.
 */

const root = join(import.meta.dirname, "..")
const doc = readFileSync(join(root, "docs", "configuration.md"), "utf8")

/** `| `NAME` | default | meaning |` rows of the tables. */
const rows = [...doc.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \| ([^|]+) \|/gm)].map((match) => ({ name: match[1]!, fallback: match[2]!.trim() }))

const load = (env: Record<string, string>) =>
  Effect.runPromise(loadServerConfig.pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env })))))

/** Comparable: URLs as their href, Redacted and Option through their JSON. */
const comparable = (config: unknown) => JSON.stringify(config)

describe("docs/configuration.md against the configuration's definition", () => {
  it("lists every variable the server reads, once, and no other", async () => {
    const variables = await Effect.runPromise(configVariables)
    const listed = rows.map((row) => row.name)
    expect(new Set(listed).size).toBe(listed.length)
    expect([...listed].sort()).toEqual([...variables].sort())
  })

  it("the definition reads every variable its source names (nothing is read only sometimes)", async () => {
    const folder = join(root, "packages", "server", "src", "config")
    const source = readdirSync(folder).filter((file) => file.endsWith(".ts")).map((file) => readFileSync(join(folder, file), "utf8")).join("\n")
    const named = new Set([...source.matchAll(/"([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|PORT|HOST)"/g)].map((match) => match[1]!))
    expect([...named].sort()).toEqual([...(await Effect.runPromise(configVariables))].sort())
  })

  it("every default is 'unset…' or a value, and each value is the server's own default", async () => {
    const unset = comparable(await load({}))
    const checked: Array<string> = []
    for (const { name, fallback } of rows) {
      const value = /^`([^`]+)`/.exec(fallback)?.[1]
      if (value === undefined) {
        expect(fallback, `${name}'s default`).toMatch(/^unset\b/)
        continue
      }
      expect(comparable(await load({ [name]: value })), `${name}=${value} is its default`).toBe(unset)
      checked.push(name)
    }
    expect(checked.length).toBeGreaterThan(25)
  })

  it("a default that is not the server's would be caught", async () => {
    expect(comparable(await load({ PORT: "3001" }))).not.toBe(comparable(await load({})))
    expect(comparable(await load({ WEBHOOK_WORKER: "false" }))).not.toBe(comparable(await load({})))
  })
})
