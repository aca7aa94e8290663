/**
 * Every fenced code block of README.md and docs/*.md (docs/decisions apart)
 * is run or checked here, so that no example can drift from what the service
 * does. The rules, by info string (docs/README.md says them for writers):
 *
 * - `sh`, `bash`, `shell`: each command is a `curl …` or an assignment
 *   `NAME=$(curl …)` / `NAME='literal'`, run with `sh -c` in document order
 *   against a server of its own for each document (fresh database, the demo
 *   fixture, `DASHBOARD_ORIGIN=https://app.example.com`, the default rate
 *   limits), with `localhost:3000` rewritten to its address. Each block's
 *   curls come from a client address of their own (127.0.0.N), so a block
 *   starts with a full rate-limit budget. A curl must be followed by `# `
 *   lines showing its output; they must match it line for line, `…` standing
 *   for any characters, and a `# …` line for any number of lines. A block
 *   with any other command needs `<!-- tested by test/X.test.ts -->` right
 *   before it (no other marker), naming a test that exists, mentions the
 *   document's file name and, for each command of the block, contains its
 *   literal head (whitespace aside): each `&&`/`|`/`;` part as far as its
 *   first word with a quote, `$`, a backquote or `…`, its `# ` comment
 *   dropped. Such a block is not run here (the test it names runs it).
 * - `ts`, `typescript`: each block is a module of its own, type-checked in one
 *   `tsc --noEmit` run with the repository's strict settings, `@hearken/api`
 *   being the thin client and `@hearken/api/effect` the Effect client.
 * - `json`: must parse; after `<!-- fixture -->` it must also decode as a
 *   fixture file (the importer's schema, unknown keys refused).
 * - `html`: every `https://YOUR-HEARKEN/…` URL in it must answer 200 on the
 *   test server.
 * - any other info string (`text`, `http`, `js`, `yaml`, …): only after
 *   `<!-- tested by test/X.test.ts -->` or `<!-- output -->` (a sample of
 *   output, shown as it comes). A block with no info string fails.
 */
import { execFile, spawn } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { basename, join, relative } from "node:path"
import { Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Fixture } from "../packages/server/src/import/Fixture.js"
import { commandHeads, type DocBlock, matchesOutput, parseBlocks, shellCommands } from "./support/doc-blocks.js"
import { freePort } from "./support/net.js"
import { waitForHealth } from "./support/process.js"
import { startServer, type TestServer } from "./support/server.js"

const root = join(import.meta.dirname, "..")
const documents = [
  "README.md",
  ...readdirSync(join(root, "docs")).filter((name) => name.endsWith(".md")).sort().map((name) => `docs/${name}`)
]
const blocksOf = (file: string) => parseBlocks(file, readFileSync(join(root, file), "utf8"))
const where = (block: DocBlock, line = block.line) => `${block.file}:${line}`

const shellLangs = new Set(["sh", "bash", "shell"])
const tsLangs = new Set(["ts", "typescript"])

/**
 * `<!-- tested by test/X.test.ts -->`: the test exists and names the
 * document, and for a shell block it contains each command's head.
 */
const testedBy = (block: DocBlock): string | undefined => {
  const test = /^tested by (test\/[\w.-]+\.test\.ts)$/.exec(block.marker ?? "")?.[1]
  if (test === undefined) return undefined
  const path = join(root, test)
  if (!existsSync(path)) throw new Error(`${test} does not exist`)
  const text = readFileSync(path, "utf8")
  if (!text.includes(basename(block.file))) {
    throw new Error(`${test} does not mention ${basename(block.file)}`)
  }
  if (shellLangs.has(block.lang)) {
    const flat = text.replace(/\s+/g, " ")
    for (const command of shellCommands(block)) {
      for (const head of commandHeads(command.text)) {
        if (!flat.includes(head)) throw new Error(`line ${command.line}: ${test} does not contain \`${head}\` (the command it is to run)`)
      }
    }
  }
  return test
}

const assignment = /^([A-Z_][A-Z0-9_]*)=(?:\$\((curl\s.*)\)|'[^']*')$/
const runnable = (command: string) => command.startsWith("curl ") || assignment.test(command)

describe("every code block has a kind the test knows", () => {
  for (const file of documents) {
    it(file, () => {
      const problems: Array<string> = []
      for (const block of blocksOf(file)) {
        try {
          if (block.lang === "") problems.push(`${where(block)}: a code block needs an info string (sh, ts, json, …)`)
          else if (shellLangs.has(block.lang)) {
            if (testedBy(block) !== undefined) continue
            if (block.marker !== undefined) {
              problems.push(`${where(block)}: a ${block.lang} block runs here or is <!-- tested by test/X.test.ts -->; <!-- ${block.marker} --> is neither`)
              continue
            }
            for (const command of shellCommands(block)) {
              if (!runnable(command.text)) {
                problems.push(`${where(block, command.line)}: only curl runs here; mark the block <!-- tested by test/X.test.ts -->`)
              } else if (command.text.startsWith("curl ") && command.expected.length === 0) {
                problems.push(`${where(block, command.line)}: show the output in "# " lines after the curl`)
              }
            }
          } else if (tsLangs.has(block.lang) || block.lang === "html") continue
          else if (block.lang === "json") {
            const value = JSON.parse(block.lines.join("\n"))
            if (block.marker === "fixture") Schema.decodeUnknownSync(Fixture)(value, { onExcessProperty: "error" })
          } else if (block.marker !== "output" && testedBy(block) === undefined) {
            problems.push(`${where(block)}: a ${block.lang} block needs <!-- tested by test/X.test.ts --> or <!-- output --> before it`)
          }
        } catch (error) {
          problems.push(`${where(block)}: ${error instanceof Error ? error.message : String(error)}`)
        }
      }
      expect(problems).toEqual([])
    })
  }
})

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
const anchorsOf = (text: string) => {
  const seen = new Map<string, number>()
  const anchors = new Set<string>()
  let inFence = false
  for (const line of text.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) inFence = !inFence
    const heading = inFence ? null : /^#{1,6}\s+(.*)$/.exec(line)
    if (heading === null) continue
    const base = heading[1]!.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-")
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    anchors.add(n === 0 ? base : `${base}-${n}`)
  }
  return anchors
}

describe("every relative link leads to a file, and its #anchor to a heading there", () => {
  for (const file of documents) {
    it(file, () => {
      const text = readFileSync(join(root, file), "utf8")
      const prose = text.replace(/^(\s*)(```|~~~)[\s\S]*?^\1\2\s*$/gm, "")
      const problems: Array<string> = []
      for (const [, target = ""] of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target)) continue
        const [path = "", anchor] = target.split("#")
        const resolved = path === "" ? join(root, file) : join(root, file, "..", path)
        if (!existsSync(resolved)) {
          problems.push(`${file}: ${target}: no such file`)
          continue
        }
        if (anchor !== undefined && resolved.endsWith(".md") && !anchorsOf(readFileSync(resolved, "utf8")).has(anchor)) {
          problems.push(`${file}: ${target}: no heading with that anchor`)
        }
      }
      expect(problems).toEqual([])
    })
  }
})

const run = (command: string, env: Record<string, string>) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile("sh", ["-c", command], { cwd: root, env: { PATH: process.env["PATH"] ?? "", ...env }, timeout: 20_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, stdout, stderr })
    })
  })

describe("the curl examples answer what they show", () => {
  for (const file of documents) {
    const blocks = blocksOf(file).filter((block) =>
      (shellLangs.has(block.lang) && block.marker === undefined && shellCommands(block).some((c) => runnable(c.text))) ||
      block.lang === "html"
    )
    if (blocks.length === 0) continue
    describe(file, () => {
      let server: TestServer
      beforeAll(async () => {
        server = await startServer({
          SEED_FILE: join(root, "packages/server/fixtures/demo.json"),
          DASHBOARD_ORIGIN: "https://app.example.com",
          RATE_LIMIT_MULTIPLIER: "1"
        })
      })
      afterAll(() => server?.close())
      const rewrite = (command: string, address: string) =>
        command
          .replace(/(?:http:\/\/)?localhost:3000/g, server.origin)
          .replace(/https:\/\/YOUR-HEARKEN/g, server.origin)
          .replace(/(^|[\s(|;&])curl\s/g, `$1curl --interface ${address} `)
      blocks.forEach((block, index) => {
        const address = `127.0.${Math.floor(index / 250)}.${2 + (index % 250)}`
        if (block.lang === "html") {
          it(`${where(block)} (html)`, async () => {
            const urls = [...block.lines.join("\n").matchAll(/https:\/\/YOUR-HEARKEN\/[^\s"'<>)]*/g)].map((m) => m[0])
            expect(urls.length, `${where(block)}: no https://YOUR-HEARKEN/ URL to check`).toBeGreaterThan(0)
            for (const url of urls) {
              const response = await fetch(rewrite(url, address))
              expect(response.status, `${where(block)}: ${url}`).toBe(200)
            }
          })
          return
        }
        it(`${where(block)} (${shellCommands(block).length} commands)`, async () => {
          const variables: Record<string, string> = {}
          for (const command of shellCommands(block)) {
            const assigned = assignment.exec(command.text)
            if (assigned !== null) {
              const result = await run(`${rewrite(command.text, address)}; printf %s "$${assigned[1]}"`, variables)
              expect(result.code, `${where(block, command.line)}: ${result.stderr}`).toBe(0)
              variables[assigned[1]!] = result.stdout
              continue
            }
            const result = await run(rewrite(command.text, address), variables)
            const actual = result.stdout.replace(/\r\n/g, "\n").replace(/\n$/, "").split("\n")
            const ok = result.code === 0 && matchesOutput(command.expected, actual)
            expect(
              ok,
              `${where(block, command.line)}: ${command.text}\n--- the document shows:\n${command.expected.join("\n")}\n--- the server answered (exit ${result.code}):\n${actual.join("\n")}\n${result.stderr}`
            ).toBe(true)
          }
        })
      })
    })
  }
})

describe("the TypeScript examples type-check", () => {
  const blocks = documents.flatMap((file) => blocksOf(file).filter((block) => tsLangs.has(block.lang)))
  it(`${blocks.length} blocks, in one tsc run`, async () => {
    expect(blocks.length).toBeGreaterThan(0)
    const dir = mkdtempSync(join(root, ".docs-ts-"))
    try {
      const files = new Map<string, DocBlock>()
      blocks.forEach((block, index) => {
        const name = `${block.file.replace(/[^\w]/g, "_")}_${block.line}_${index}.ts`
        files.set(name, block)
        writeFileSync(join(dir, name), block.lines.join("\n") + "\n")
      })
      writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({
        extends: "../tsconfig.base.json",
        compilerOptions: {
          noEmit: true,
          composite: false,
          declaration: false,
          incremental: false,
          types: ["node"]
        },
        include: ["*.ts"]
      }))
      const result = await run(`"${join(root, "node_modules/.bin/tsc")}" -p "${join(dir, "tsconfig.json")}" --pretty false`, {})
      const errors = result.stdout.split("\n").filter((line) => line.trim() !== "").map((line) => {
        const at = /^(?:.*[\\/])?([\w.]+\.ts)\((\d+),(\d+)\): (.*)$/.exec(line)
        const block = at === null ? undefined : files.get(at[1]!)
        return block === undefined ? line : `${where(block, block.line + Number(at![2]))}:${at![3]}: ${at![4]}`
      })
      expect(errors, relative(root, dir)).toEqual([])
      expect(result.code).toBe(0)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 120_000)
})

/**
 * docs/webhooks.md's walkthrough ("Try it on one machine"), followed as the
 * page writes it: its fixture block saved as acme.json (the receiver's port 4000
 * replaced by a free one), the receiver block run with
 * `HEARKEN_WEBHOOK_SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw PORT=4000 node receiver.ts`,
 * Hearken started with `SEED_FILE=acme.json WEBHOOK_ALLOW_PRIVATE_URLS=true npm start`
 * (on the embedded database, as a reader without DATABASE_URL has it), the
 * page's `curl -s localhost:3000/api/widget/v1/feedback -H …` line, and the
 * line the receiver prints compared with the page's text block. Every
 * command and its environment is read from the page.
 */
describe("docs/webhooks.md's walkthrough", () => {
  /** `A=1 B=2 cmd args` → the assignments and the command. */
  const parseEnv = (command: string) => {
    const env: Record<string, string> = {}
    let rest = command
    for (let m = /^([A-Z_][A-Z0-9_]*)=(\S+)\s+/.exec(rest); m !== null; m = /^([A-Z_][A-Z0-9_]*)=(\S+)\s+/.exec(rest)) {
      env[m[1]!] = m[2]!
      rest = rest.slice(m[0].length)
    }
    return { env, command: rest }
  }

  it("delivers a post to the receiver, which prints what the page shows", async () => {
    const blocks = blocksOf("docs/webhooks.md")
    const receiverBlock = blocks.find((b) => tsLangs.has(b.lang) && b.lines.some((l) => l.includes('from "standardwebhooks"')))
    const fixtureBlock = blocks.find((b) => b.lang === "json" && b.marker === "fixture")
    const commands = blocks.filter((b) => shellLangs.has(b.lang)).flatMap((b) => shellCommands(b).map((c) => ({ block: b, ...c })))
    const receiverLine = commands.find((c) => c.text.endsWith("node receiver.ts"))
    const serverLine = commands.find((c) => c.text.endsWith("npm start"))
    const curlLine = commands.find((c) => c.text.startsWith("curl ") && c.text.includes("org_acme"))
    const printed = blocks.find((b) => b.lang === "text" && curlLine !== undefined && b.line > curlLine.line)
    expect([receiverBlock, fixtureBlock, receiverLine, serverLine, curlLine, printed].map((x) => x !== undefined)).toEqual([true, true, true, true, true, true])

    const receiverRun = parseEnv(receiverLine!.text)
    const serverRun = parseEnv(serverLine!.text)
    expect(receiverRun.command).toBe("node receiver.ts")
    expect(serverRun.command).toBe("npm start")
    expect(serverRun.env["SEED_FILE"]).toBe("acme.json")

    const dir = mkdtempSync(join(root, ".docs-ts-"))
    const receiverPort = await freePort()
    const hearkenPort = await freePort()
    // The fixture, its endpoints moved from the page's receiver port to the free one.
    const fixture = JSON.parse(fixtureBlock!.lines.join("\n")) as {
      organizations: Array<{ webhooks?: Array<{ url: string; secret: string }> }>
    }
    const endpoints = fixture.organizations.flatMap((o) => o.webhooks ?? [])
    expect(endpoints.map((e) => new URL(e.url).port)).toEqual([receiverRun.env["PORT"]])
    expect(endpoints.map((e) => e.secret)).toEqual([receiverRun.env["HEARKEN_WEBHOOK_SECRET"]])
    for (const endpoint of endpoints) {
      const url = new URL(endpoint.url)
      url.port = String(receiverPort)
      endpoint.url = url.href
    }
    writeFileSync(join(dir, "acme.json"), JSON.stringify(fixture))
    writeFileSync(join(dir, "receiver.ts"), receiverBlock!.lines.join("\n") + "\n")

    const receiver = spawn(process.execPath, ["receiver.ts"], {
      cwd: dir,
      env: { PATH: process.env["PATH"] ?? "", ...receiverRun.env, PORT: String(receiverPort) },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    receiver.stdout.on("data", (chunk) => (output += chunk))
    receiver.stderr.on("data", (chunk) => (output += chunk))
    // Under `npm test`, npm_execpath is the npm that runs us; otherwise the one on the PATH.
    const npm = process.env["npm_execpath"]
    const [program, args] = npm === undefined ? ["npm", ["start"]] : [process.execPath, [npm, "start"]]
    const hearken = spawn(program, args, {
      cwd: root,
      detached: true,
      stdio: "ignore",
      env: {
        PATH: process.env["PATH"] ?? "",
        ...serverRun.env,
        SEED_FILE: join(dir, "acme.json"),
        PORT: String(hearkenPort),
        HOST: "127.0.0.1",
        PGLITE_DIR: "memory"
      }
    })
    try {
      const origin = `http://127.0.0.1:${hearkenPort}`
      await waitForHealth(origin, 90_000)
      const result = await run(curlLine!.text.replace(/(?:http:\/\/)?localhost:3000/g, origin), {})
      const answer = result.stdout.replace(/\n$/, "").split("\n")
      expect(result.code, result.stderr).toBe(0)
      expect(matchesOutput(curlLine!.expected, answer), `${where(curlLine!.block, curlLine!.line)}: the server answered ${answer.join("\n")}`).toBe(true)
      const id = (JSON.parse(result.stdout) as { id: string }).id
      const lineOf = () => output.split("\n").find((line) => line.includes(` ${id} `))
      await expect.poll(lineOf, { timeout: 15_000 }).toBeDefined()
      expect(
        matchesOutput(printed!.lines, [lineOf()!]),
        `${where(printed!)}: the page shows\n${printed!.lines.join("\n")}\n--- the receiver printed:\n${output}`
      ).toBe(true)
      // A forged delivery is refused.
      const forged = await fetch(`http://127.0.0.1:${receiverPort}/`, {
        method: "POST",
        headers: { "webhook-id": "msg_x", "webhook-timestamp": String(Math.floor(Date.now() / 1000)), "webhook-signature": "v1,AAAA" },
        body: "{}"
      })
      expect(forged.status).toBe(400)
    } finally {
      receiver.kill()
      // npm does not pass SIGTERM on to its child: signal the whole process group.
      try {
        process.kill(-hearken.pid!, "SIGTERM")
      } catch {
        // already gone
      }
      rmSync(dir, { recursive: true, force: true })
    }
  }, 150_000)
})
