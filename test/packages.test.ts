/**
 * The packages as a stranger gets them (issue 29, `npm run release:check`):
 * `npm pack` each of `@hearken/api` and `@hearken/widget`, install the
 * tarballs into a fresh project in the system's temporary directory (no
 * workspace, no links, its own package.json), with `effect` and `typescript`
 * from the registry at the repository's versions, type-check a usage file
 * with that `tsc`, and run it with Node against the real server. A second
 * project installs `@hearken/api` alone, without `effect`, and type-checks
 * the thin client there: the root's code and declarations need no `effect`.
 * Under `npm test` the packs use the built `dist/` (`npm run build` first;
 * `npm test` does) with `--ignore-scripts`: `prepack` would rebuild the
 * widget under the feet of the other test files. `npm run release:check`
 * runs this file alone with `RELEASE_CHECK=1`, and the packs run `prepack`
 * as `npm publish` would, one after the other.
 * The usage file is type-checked with `moduleResolution` `NodeNext` and
 * `bundler`. `node10` (`"node"`) cannot be: TypeScript 7 removed it (TS5108);
 * the packages' `typesVersions`, which TypeScript 5 and older read there,
 * are checked against `exports` instead.
 */
import { execFile } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join, relative } from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { baseFixture, fixturePost } from "./support/fixtures.js"
import { startSeededServer, useServer } from "./support/server.js"

const run = promisify(execFile)
const root = join(import.meta.dirname, "..")
const versionOf = (name: string) =>
  (JSON.parse(readFileSync(join(root, "node_modules", name, "package.json"), "utf8")) as { version: string }).version

/**
 * npm as a user runs it: none of the `npm_*` variables of the `npm test`
 * that may have started this file (they name this repository's package,
 * workspaces and prefix) but the machine's registry, cache and proxy
 * settings, with the cache first, so an install takes seconds.
 */
const machineSetting = /^npm_config_(registry|cache|userconfig|proxy|https_proxy|noproxy|cafile|strict_ssl)$/i
const npmEnv = {
  ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key) || machineSetting.test(key))),
  npm_config_prefer_offline: "true",
  npm_config_audit: "false",
  npm_config_fund: "false",
  npm_config_update_notifier: "false"
}
const npm = (args: ReadonlyArray<string>, cwd: string) =>
  run("npm", [...args], { cwd, env: npmEnv, maxBuffer: 16 * 1024 * 1024 })

/** `npm run release:check`: the packs run their `prepack` scripts, as a publish does. */
const releaseCheck = process.env["RELEASE_CHECK"] === "1"

interface Packed {
  readonly filename: string
  readonly files: ReadonlyArray<string>
  /** What npm wrote to stderr: the lifecycle scripts' banners and output. */
  readonly log: string
}
const pack = async (name: "api" | "widget", into: string): Promise<Packed> => {
  const dir = join(root, "packages", name)
  if (!existsSync(join(dir, "dist"))) throw new Error(`packages/${name}/dist is missing: run npm run build first`)
  const { stdout, stderr } = await npm(["pack", ...(releaseCheck ? [] : ["--ignore-scripts"]), "--json", "--pack-destination", into], dir)
  const [result] = JSON.parse(stdout) as Array<{ filename: string; files: Array<{ path: string }> }>
  return { filename: join(into, result!.filename), files: result!.files.map((f) => f.path).sort(), log: stderr }
}

const tsconfig = {
  compilerOptions: {
    target: "ES2023",
    module: "NodeNext",
    moduleResolution: "NodeNext",
    lib: ["ES2023", "DOM"],
    types: [],
    strict: true,
    exactOptionalPropertyTypes: true,
    noUncheckedIndexedAccess: true,
    verbatimModuleSyntax: true,
    // The packages' declarations are checked too: an import they cannot resolve is an error, not `any`.
    skipLibCheck: false,
    noEmit: true
  },
  include: ["*.ts"]
}

/** The same check as a bundler's project reads it (Vite, esbuild, webpack): `exports` with the `types` condition, no file extensions needed. */
const bundlerTsconfig = {
  ...tsconfig,
  compilerOptions: { ...tsconfig.compilerOptions, module: "ESNext", moduleResolution: "bundler" }
}

const newProject = async (dir: string) => {
  await mkdir(dir)
  await writeFile(join(dir, "package.json"), JSON.stringify({ name: "hearken-consumer", private: true, type: "module" }))
  await writeFile(join(dir, "tsconfig.json"), JSON.stringify(tsconfig))
}
const tsc = (dir: string) => run(join(dir, "node_modules/.bin/tsc"), ["-p", dir], { cwd: dir }).catch((error) => {
  throw new Error(`tsc failed in ${dir}:\n${error.stdout}${error.stderr}`)
})

/** The usage file: the thin client (the root), the Effect client, and the widget's types. */
const usage = (origin: string) => `
import { Limits, makeThinClient, type Board, type ClientError, type CreatedPost } from "@hearken/api"
import { makeThinClient as makeThinClientByAlias } from "@hearken/api/thin"
import { makeClient, NotFoundError, withIdempotencyKey, type HearkenClient } from "@hearken/api/effect"
import type { InitOptions, WidgetEvent } from "@hearken/widget"
import { Effect } from "effect"

const origin = ${JSON.stringify(origin)}
const organizationId = "org_acme"
const client = makeThinClient(origin)

const boards = await client.boards({ organizationId })
if (!boards.ok || "notModified" in boards) throw new Error("boards: " + JSON.stringify(boards))
const firstBoard: Board | undefined = boards.value[0]
const updates = await client.updates({ organizationId })
const suggestions = await client.suggestions({ organizationId, boardId: "b_feat", title: "dark mode", content: "" })
const draft = { organizationId, boardId: "b_feat", title: "Packed and installed", content: "<p>from the tarball</p>" }
const created = await client.feedback(draft, { idempotencyKey: "packages-test-1" })
const retried = await makeThinClientByAlias(origin).feedback(draft, { idempotencyKey: "packages-test-1" })
const missing = await client.feedback({ ...draft, boardId: "b_missing" })
if (!missing.ok) {
  const error: ClientError<"feedback"> = missing.error
  void error
}
if (created.ok) {
  const post: CreatedPost = created.value
  void post
}
// @ts-expect-error: the body lacks boardId, title and content; exact types, not any.
void client.feedback({ organizationId })
// @ts-expect-error: boards takes a query, with organizationId.
void client.boards({})

const typed = await Effect.runPromise(Effect.gen(function*() {
  const api: HearkenClient = yield* makeClient(origin)
  const boards = yield* api.widget.boards({ query: { organizationId } })
  const notFound = yield* api.widget.feedback({ payload: { ...draft, boardId: "b_missing" } }).pipe(
    Effect.map(() => "created"),
    Effect.catchTag("NotFoundError", (error) => Effect.succeed(error))
  )
  const payload = { ...draft, title: "Packed, typed" }
  const first = yield* api.widget.feedback({ payload }).pipe(withIdempotencyKey("packages-test-2"))
  const again = yield* api.widget.feedback({ payload }).pipe(withIdempotencyKey("packages-test-2"))
  return {
    boards: boards.map((board) => board.id),
    notFound: notFound instanceof NotFoundError ? notFound.message : notFound,
    sameAgain: again.id === first.id ? first.slug : "another post"
  }
}))

const options: InitOptions = { organizationId, target: "#hearken", mode: "launcher", onEvent: (event: WidgetEvent) => void event.type }
// @ts-expect-error: mode is inline or launcher.
const wrong: InitOptions = { organizationId, mode: "popup" }
void wrong

console.log(JSON.stringify({
  boards: boards.value.map((board) => board.id),
  firstBoard,
  etag: typeof boards.etag,
  updates,
  suggestions,
  created,
  retried,
  missing,
  typed,
  titleLimit: Limits.title,
  widgetMode: options.mode
}))
`

/** A thin client alone, in a project without effect. */
const thinOnly = `
import { makeThinClient, type Success } from "@hearken/api"

const client = makeThinClient("http://127.0.0.1:1")
export const names = async (): Promise<Array<string>> => {
  const answer = await client.boards({ organizationId: "org_acme" })
  if (!answer.ok || "notModified" in answer) return []
  const boards: Success<"boards"> = answer.value
  return boards.map((board) => board.name)
}
// @ts-expect-error: name is a string; were the declarations unresolved, it would be any and compile.
export const wrong: number = (null as unknown as Success<"boards">)[0]!.name
`

const fixture = baseFixture()
fixture.organizations[0]!.posts = [fixturePost("p_dark", "Dark mode", "Please add a dark mode")]
fixture.organizations[0]!.updates = [
  { id: "u_packed", title: "Packages", slug: "packages", content: "<p>On npm</p>", publishedAt: "2026-02-01T00:00:00.000Z" }
]
const server = useServer(() => startSeededServer(fixture))

let work = ""
let api: Packed
let widget: Packed
const app = () => join(work, "app")

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "hearken-packages-"))
  // With their scripts, one after the other: the widget's `tsc -b` builds @hearken/api's project too.
  ;[api, widget] = releaseCheck
    ? [await pack("api", work), await pack("widget", work)]
    : await Promise.all([pack("api", work), pack("widget", work)])
  await Promise.all([newProject(app()), newProject(join(work, "thin-only"))])
  await Promise.all([
    npm(["install", api.filename, widget.filename, `effect@${versionOf("effect")}`, `typescript@${versionOf("typescript")}`], app()),
    npm(["install", api.filename, `typescript@${versionOf("typescript")}`], join(work, "thin-only"))
  ])
}, 120_000)
afterAll(() => work === "" ? undefined : rm(work, { recursive: true, force: true }))

describe("the tarballs", () => {
  it("are made outside the repository", () => {
    expect(relative(root, work).startsWith("..")).toBe(true)
  })

  it("@hearken/api holds the built modules with their types, the README and the LICENSE, and nothing else", () => {
    const modules = ["Api", "client", "errors", "index", "limits", "schemas", "thin", "webhooks", "wire"]
    expect(api.files).toEqual(
      ["LICENSE", "README.md", ...modules.flatMap((m) => [`dist/${m}.d.ts`, `dist/${m}.js`]), "package.json"].sort()
    )
  })

  it("@hearken/widget holds widget.js and the modules it imports, embed.js, the types, the README and the LICENSE", () => {
    const locales = ["ar", "de", "es", "fr", "he", "it", "ja", "ko", "nl", "pl", "pt", "pt-PT", "ru", "tr", "zh-Hans"]
    const types = ["accent", "boards", "checks", "context", "controller", "dom", "embed", "emitter", "form", "frame", "i18n", "index",
      "launcher", "links", "messages", "options", "protocol", "scheduler", "sibling", "suggestions", "tabs", "theme", "ui", "updates",
      ...locales.map((l) => `locales/${l}`)]
    expect(widget.files).toEqual([
      "LICENSE",
      "README.md",
      ...["accent", "embed", "frame", "launcher", "suggestions", "updates", "widget"].map((m) => `dist/${m}.js`),
      ...locales.map((l) => `dist/locales/${l}.js`),
      ...types.map((t) => `dist/types/${t}.d.ts`),
      "package.json"
    ].sort())
  })

  it("declare themselves public, MIT, ES modules, with effect an optional peer of @hearken/api and @hearken/api a range of the widget's", async () => {
    const manifest = async (name: string) =>
      JSON.parse(await readFile(join(app(), "node_modules/@hearken", name, "package.json"), "utf8")) as Record<string, unknown>
    const [apiManifest, widgetManifest] = await Promise.all([manifest("api"), manifest("widget")])
    for (const m of [apiManifest, widgetManifest]) {
      expect(m).toMatchObject({ version: "0.1.0", license: "MIT", type: "module", publishConfig: { access: "public" } })
      expect(m["private"]).toBeUndefined()
    }
    expect(apiManifest["dependencies"]).toBeUndefined()
    expect(apiManifest["peerDependencies"]).toEqual({ effect: `^${versionOf("effect")}` })
    expect(apiManifest["peerDependenciesMeta"]).toEqual({ effect: { optional: true } })
    expect(Object.keys(apiManifest["exports"] as object)).toEqual([".", "./thin", "./effect", "./package.json"])
    expect(widgetManifest["dependencies"]).toEqual({ "@hearken/api": "^0.1.0" })
  })

  it.runIf(releaseCheck)("were made by npm pack with the prepack scripts run (release:check)", () => {
    expect(api.log).toContain("> @hearken/api@0.1.0 prepack\n> tsc -b")
    expect(widget.log).toContain("> @hearken/widget@0.1.0 prepack\n> tsc -b && node build.mjs")
  })

  it("map each export's declarations in typesVersions too, for TypeScript's node10 resolution (which TypeScript 7 no longer has)", async () => {
    for (const name of ["api", "widget"]) {
      const manifest = JSON.parse(await readFile(join(app(), "node_modules/@hearken", name, "package.json"), "utf8")) as {
        types: string
        exports: Record<string, string | { types?: string }>
        typesVersions: Record<string, Record<string, ReadonlyArray<string>>>
      }
      const typed = Object.entries(manifest.exports).flatMap(([subpath, target]) =>
        typeof target === "object" && target.types !== undefined ? [[subpath, target.types] as const] : [])
      const mapped = Object.fromEntries(typed.filter(([subpath]) => subpath !== ".").map(([subpath, types]) => [subpath.slice(2), [types]]))
      expect(manifest.typesVersions).toEqual({ "*": mapped })
      expect(manifest.types).toBe(typed.find(([subpath]) => subpath === ".")![1])
      // Each is a file of the tarball.
      for (const [, types] of typed) expect(existsSync(join(app(), "node_modules/@hearken", name, types))).toBe(true)
    }
  })

  it("carry the repository's LICENSE", async () => {
    const license = await readFile(join(root, "LICENSE"), "utf8")
    for (const name of ["api", "widget"]) {
      expect(await readFile(join(app(), "node_modules/@hearken", name, "LICENSE"), "utf8")).toBe(license)
    }
  })

  it("install as packages, not links, with @hearken/api once (the widget's range takes the tarball's)", async () => {
    const { stdout } = await npm(["ls", "--all", "--json"], app())
    const tree = JSON.parse(stdout) as { dependencies: Record<string, { version: string; resolved: string; dependencies?: Record<string, { version: string }> }> }
    expect(tree.dependencies["@hearken/api"]).toMatchObject({ version: "0.1.0", resolved: `file:${api.filename}` })
    expect(tree.dependencies["@hearken/widget"]).toMatchObject({ version: "0.1.0", resolved: `file:${widget.filename}` })
    expect(tree.dependencies["@hearken/widget"]!.dependencies?.["@hearken/api"]).toMatchObject({ version: "0.1.0" })
    expect(existsSync(join(app(), "node_modules/@hearken/widget/node_modules"))).toBe(false)
    expect(tree.dependencies["effect"]!.version).toBe(versionOf("effect"))
  })
})

describe("a consumer", () => {
  it("type-checks a usage file with tsc and runs it against the server: the four endpoints, Idempotency-Key, errors", async () => {
    await writeFile(join(app(), "usage.ts"), usage(server.origin))
    await tsc(app())
    // As a bundler's project resolves it.
    await writeFile(join(app(), "tsconfig.bundler.json"), JSON.stringify(bundlerTsconfig))
    await run(join(app(), "node_modules/.bin/tsc"), ["-p", "tsconfig.bundler.json"], { cwd: app() }).catch((error) => {
      throw new Error(`tsc (moduleResolution bundler) failed:\n${error.stdout}${error.stderr}`)
    })
    const { stdout } = await run(process.execPath, ["usage.ts"], { cwd: app() })
    const out = JSON.parse(stdout)
    expect(out.boards).toEqual(["b_bugs", "b_feat", "b_same_time_a", "b_same_time_b"])
    expect(out.firstBoard).toEqual({
      id: "b_bugs",
      name: "Bugs",
      slug: "bugs",
      organizationId: "org_acme",
      createdAt: "2026-01-01T00:00:00.000Z",
      updatedAt: "2026-01-01T00:00:00.000Z"
    })
    expect(out.etag).toBe("string")
    expect(out.updates).toEqual({
      ok: true,
      etag: expect.stringMatching(/^(W\/)?"/),
      value: [{
        id: "u_packed",
        title: "Packages",
        slug: "packages",
        content: "<p>On npm</p>",
        excerpt: "On npm",
        imageUrl: null,
        publishedAt: "2026-02-01T00:00:00.000Z"
      }]
    })
    expect(out.suggestions).toEqual({
      ok: true,
      value: [{ id: "p_dark", title: "Dark mode", excerpt: "Please add a dark mode", slug: "dark-mode" }]
    })
    expect(out.created).toEqual({
      ok: true,
      value: {
        id: expect.any(String),
        slug: "packed-and-installed",
        title: "Packed and installed",
        boardId: "b_feat",
        organizationId: "org_acme",
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      }
    })
    // The retry with the same key answers the same post, and creates nothing.
    expect(out.retried).toEqual(out.created)
    const rows = await server.db.query<{ id: string }>((sql) => sql`SELECT id FROM posts WHERE title = 'Packed and installed'`)
    expect(rows).toEqual([{ id: out.created.value.id }])
    expect(out.missing).toEqual({
      ok: false,
      status: 404,
      error: { _tag: "NotFoundError", message: "boardId: no such board in this organization" }
    })
    expect(out.typed).toEqual({
      boards: ["b_bugs", "b_feat", "b_same_time_a", "b_same_time_b"],
      notFound: "boardId: no such board in this organization",
      sameAgain: "packed-typed"
    })
    expect(await server.db.query((sql) => sql`SELECT count(*)::int AS n FROM posts WHERE title = 'Packed, typed'`)).toEqual([{ n: 1 }])
    expect(out.titleLimit).toBe(200)
    expect(out.widgetMode).toBe("launcher")
  }, 60_000)

  it("type-checks every ts block of packages/api/README.md and packages/widget/README.md as a consumer", async () => {
    const dir = join(app(), "readme")
    await mkdir(dir)
    await writeFile(join(dir, "tsconfig.json"), JSON.stringify(tsconfig))
    let count = 0
    for (const name of ["api", "widget"]) {
      const readme = await readFile(join(root, "packages", name, "README.md"), "utf8")
      for (const [, code] of readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)) {
        await writeFile(join(dir, `${name}-${++count}.ts`), code!)
      }
    }
    expect(count).toBe(4)
    // In the consumer project, so the blocks import its node_modules.
    await run(join(app(), "node_modules/.bin/tsc"), ["-p", dir], { cwd: dir }).catch((error) => {
      throw new Error(`tsc failed on the READMEs' blocks:\n${error.stdout}${error.stderr}`)
    })
  }, 60_000)

  it("gets the thin client's exact types without effect installed, and imports the root without it", async () => {
    const dir = join(work, "thin-only")
    expect(existsSync(join(dir, "node_modules/effect"))).toBe(false)
    await writeFile(join(dir, "thin.ts"), thinOnly)
    await tsc(dir)
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e",
      "const m = await import('@hearken/api'); const t = await import('@hearken/api/thin'); " +
      "console.log(JSON.stringify([typeof m.makeThinClient, m.makeThinClient === t.makeThinClient, m.Limits.content]))"], { cwd: dir })
    expect(JSON.parse(stdout)).toEqual(["function", true, 20_000])
  }, 60_000)

  it("finds @hearken/widget's modules: widget.js as the package's root, and embed.js, a classic script", async () => {
    const resolve = (specifier: string) =>
      run(process.execPath, ["--input-type=module", "-e", `console.log(import.meta.resolve(${JSON.stringify(specifier)}))`], { cwd: app() })
        .then(({ stdout }) => relative(app(), new URL(stdout.trim()).pathname))
    expect(await resolve("@hearken/widget")).toBe("node_modules/@hearken/widget/dist/widget.js")
    expect(await resolve("@hearken/widget/embed.js")).toBe("node_modules/@hearken/widget/dist/embed.js")
    const embed = await readFile(join(app(), "node_modules/@hearken/widget/dist/embed.js"), "utf8")
    // esbuild's IIFE: one function expression called at once, no module syntax.
    expect(embed.startsWith(`"use strict";(()=>{`)).toBe(true)
    expect(embed.trimEnd().endsWith("})();")).toBe(true)
    expect(embed).not.toMatch(/(^|[;}])\s*(import|export)[\s{*]/)
  })
})
