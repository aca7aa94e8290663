/**
 * The fenced code blocks of a Markdown file, for `test/docs-examples.test.ts`:
 * each with its info string, the line it opens on, the marker comment
 * directly before it, and its commands when it is a shell block.
 */

export interface DocBlock {
  readonly file: string
  /** 1-based line of the opening fence. */
  readonly line: number
  /** The info string's first word, lower-cased; "" when there is none. */
  readonly lang: string
  /** The `<!-- … -->` comment on the last non-blank line before the fence, without `<!--`/`-->`. */
  readonly marker: string | undefined
  /** The lines between the fences, with the fence's indentation removed. */
  readonly lines: ReadonlyArray<string>
}

const fence = /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)/

export const parseBlocks = (file: string, text: string): ReadonlyArray<DocBlock> => {
  const all = text.split("\n")
  const blocks: Array<DocBlock> = []
  let previous: string | undefined
  for (let i = 0; i < all.length; i++) {
    const open = fence.exec(all[i]!)
    if (open === null) {
      if (all[i]!.trim() !== "") previous = all[i]!.trim()
      continue
    }
    const [, indent = "", ticks = "", info = ""] = open
    const lines: Array<string> = []
    let j = i + 1
    for (; j < all.length; j++) {
      const line = all[j]!
      if (line.trim().startsWith(ticks) && line.trim().replace(/[`~]/g, "") === "") break
      lines.push(line.startsWith(indent) ? line.slice(indent.length) : line.trimStart())
    }
    const marker = previous !== undefined && /^<!--.*-->$/.test(previous) ? previous.slice(4, -3).trim() : undefined
    blocks.push({ file, line: i + 1, lang: info.toLowerCase(), marker, lines })
    previous = undefined
    i = j
  }
  return blocks
}

export interface ShellCommand {
  /** 1-based line in the document. */
  readonly line: number
  /** The command, continuation lines joined. */
  readonly text: string
  /** The `# ` lines right after it (no blank line between), without `# `. */
  readonly expected: ReadonlyArray<string>
}

/**
 * A shell block's commands. A comment line right after a command (or after
 * its other expected lines) is expected output; a comment anywhere else is a
 * comment.
 */
export const shellCommands = (block: DocBlock): ReadonlyArray<ShellCommand> => {
  const commands: Array<{ line: number; text: string; expected: Array<string> }> = []
  let current: { line: number; text: string; expected: Array<string> } | undefined
  for (let i = 0; i < block.lines.length; i++) {
    const line = block.lines[i]!
    if (line.trim() === "") {
      current = undefined
      continue
    }
    if (/^#( |$)/.test(line)) {
      current?.expected.push(line.slice(2))
      continue
    }
    let text = line
    const start = i
    while (text.endsWith("\\") && i + 1 < block.lines.length) {
      i++
      text = `${text.slice(0, -1)} ${block.lines[i]!.trim()}`
    }
    current = { line: block.line + 1 + start, text: text.trim(), expected: [] }
    commands.push(current)
  }
  return commands
}

/**
 * What a test that runs a shell command must contain of it: each part between
 * `&&`, `||`, `;` and `|`, as far as its first word holding a quote, `$`, a
 * backquote or `…` (what the test may fill in), its `# ` comment dropped.
 */
export const commandHeads = (command: string): ReadonlyArray<string> =>
  command.replace(/\s+#\s.*$/, "").split(/&&|\|\||;|\|/).map((part) => {
    const words: Array<string> = []
    for (const word of part.trim().split(/\s+/)) {
      if (/['"$`…]/.test(word)) break
      words.push(word)
    }
    return words.join(" ")
  }).filter((head) => head !== "")

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/**
 * Whether `actual` (a command's output) is what `expected` shows: line for
 * line, where `…` in a line stands for any characters and a line of `…`
 * alone for any number of lines (none included).
 */
export const matchesOutput = (expected: ReadonlyArray<string>, actual: ReadonlyArray<string>): boolean => {
  const patterns = expected.map((line) =>
    line.trim() === "…" ? "lines" as const : new RegExp(`^${line.split("…").map(escape).join(".*")}$`)
  )
  const match = (p: number, a: number): boolean => {
    if (p === patterns.length) return a === actual.length
    const pattern = patterns[p]!
    if (pattern === "lines") {
      for (let skip = a; skip <= actual.length; skip++) if (match(p + 1, skip)) return true
      return false
    }
    return a < actual.length && pattern.test(actual[a]!) && match(p + 1, a + 1)
  }
  return match(0, 0)
}
