/**
 * Prints the browser bundles' sizes against their budgets (the measuring is
 * `test/support/sizes.ts`, which the budget test shares). `node
 * bench/sizes.ts` prints them alone; `npm run bench` prints and records them.
 * Both need `npm run build` first.
 */
import { type BundleSize, bundleSizes } from "../test/support/sizes.ts"

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`

export const printBundleSizes = (sizes: ReadonlyArray<BundleSize>) => {
  console.log("\n| bundle | minified | gzip | budget (gzip) |")
  console.log("|---|---|---|---|")
  for (const s of sizes) {
    console.log(`| ${s.name} | ${kb(s.rawBytes)} | ${kb(s.gzipBytes)} (${s.gzipBytes} B) | ${kb(s.budgetGzipBytes)}: ${s.met ? "met" : "missed"} |`)
  }
  console.log("")
}

if (process.argv[1] === import.meta.filename) printBundleSizes(await bundleSizes())
