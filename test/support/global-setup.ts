import { adminUrl, checkPostgres } from "./database.js"

/** Fails the run at once, with one clear line, when the test PostgreSQL is not there. */
export default async function setup() {
  await checkPostgres().catch((error: unknown) => {
    throw new Error(
      `Tests need PostgreSQL with vector and pg_trgm at ${adminUrl} (run scripts/prepare-services.sh): ${String(error)}`
    )
  })
}
