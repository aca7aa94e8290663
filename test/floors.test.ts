import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { describe, expect, it } from "vitest"

/**
 * The server's floors (README, "Layout"): each folder of `packages/server/src`
 * is a room, and a file at its root (the entry points and `App.ts`) a room of
 * its own. An import is an arrow between rooms. No arrows may run in a circle:
 * a folder that imports another is never imported back by it, directly or
 * through others, so every folder stands on a floor above what it uses.
 */
const src = resolve(import.meta.dirname, "../packages/server/src")

const sources = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : []
  )

/** `sql/migrations` belongs to `sql`; a root file is its own room. */
const roomOf = (file: string) => {
  const path = relative(src, file)
  const [first, ...rest] = path.split("/")
  return rest.length === 0 ? path : first!
}

const arrows = (): Map<string, Map<string, Set<string>>> => {
  const out = new Map<string, Map<string, Set<string>>>()
  for (const file of sources(src)) {
    const from = roomOf(file)
    const text = readFileSync(file, "utf8")
    for (const match of text.matchAll(/(?:from|import)\s*\(?\s*"(\.{1,2}\/[^"]+)"/g)) {
      const target = resolve(dirname(file), match[1]!).replace(/\.js$/, ".ts")
      if (!target.startsWith(src + "/")) continue
      const to = roomOf(target)
      if (to === from) continue
      const byTarget = out.get(from) ?? new Map<string, Set<string>>()
      out.set(from, byTarget)
      const why = byTarget.get(to) ?? new Set<string>()
      byTarget.set(to, why)
      why.add(`${relative(src, file)} -> ${relative(src, target)}`)
    }
  }
  return out
}

/** Every circle of rooms, found by walking from each room (the graph is a few dozen rooms). */
const circles = (graph: Map<string, Map<string, Set<string>>>): Array<Array<string>> => {
  const found = new Map<string, Array<string>>()
  const walk = (start: string, at: string, path: Array<string>) => {
    for (const next of graph.get(at)?.keys() ?? []) {
      if (found.size >= 20) return
      if (next === start) {
        const circle = [...path]
        const key = [...circle].sort().join(" ")
        if (!found.has(key)) found.set(key, circle)
      } else if (!path.includes(next) && next > start) walk(start, next, [...path, next])
    }
  }
  for (const room of graph.keys()) walk(room, room, [room])
  return [...found.values()]
}

describe("the server's floors", () => {
  it("no folder imports one that imports it back, directly or through others", () => {
    const graph = arrows()
    const described = circles(graph).map((circle) =>
      circle.map((room, i) => {
        const next = circle[(i + 1) % circle.length]!
        return `${room} -> ${next} (${[...graph.get(room)!.get(next)!].join(", ")})`
      }).join("; ")
    )
    expect(described).toEqual([])
  })

  it("sees the arrows it judges: App.ts imports the features, which stand on sql, which stands on observability", () => {
    const graph = arrows()
    expect([...graph.get("App.ts")!.keys()]).toEqual(expect.arrayContaining(["boards", "feedback", "suggestions", "updates", "webhooks"]))
    for (const feature of ["boards", "updates", "suggestions", "embeddings"]) expect(graph.get(feature)!.has("sql")).toBe(true)
    expect(graph.get("sql")!.has("observability")).toBe(true)
  })
})
