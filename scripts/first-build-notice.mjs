// Run by `npm start`, `npm run seed`, `npm run worker` and `npm run webhooks` before their build
// (root package.json): on a fresh clone that build takes about a minute, which should not pass in
// silence. On stderr, so that a command's own output (`npm run webhooks -- …`) stays clean.
// Plain Node, no dependency: it runs before anything is built. test/first-build.test.ts runs it.
import { existsSync } from "node:fs"

if (!existsSync("packages/server/dist/main.js")) {
  process.stderr.write("hearken: building it the first time (about a minute)…\n")
}
