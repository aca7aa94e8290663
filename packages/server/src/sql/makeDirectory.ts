import * as fs from "node:fs"
import * as path from "node:path"

/**
 * `mkdir -p`, one level at a time. Node's own recursive `mkdirSync` loops for ever, at full CPU,
 * where `mkdir` answers ENOENT under a parent that exists (`/proc/x`); here that error is the answer.
 */
export const makeDirectory = (target: string): void => {
  const parent = path.dirname(target)
  if (parent !== target && !fs.existsSync(parent)) makeDirectory(parent)
  try {
    fs.mkdirSync(target)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST" || !fs.statSync(target).isDirectory()) throw error
  }
}
