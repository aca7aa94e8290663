import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Schema } from "effect"
import { decoded, orDie, RowsNotDecoded } from "../packages/server/src/sql/SqlFailure.js"

/**
 * Rows a statement's schema refuses are a defect, logged as the server logs
 * every 500's cause: the defect names the field and what was expected, never
 * the value, which may be a webhook's or an organization's secret.
 */
const Row = Schema.Struct({ id: Schema.String, secret: Schema.String })
const refused = Schema.decodeUnknownEffect(Row)({ id: "e_1", secret: 1234567 })

describe("rows that do not decode", () => {
  for (const [name, map] of [["decoded", decoded], ["orDie", orDie]] as const) {
    it.effect(`${name}: a defect that names the field, without the value`, () =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(map(refused))
        expect(Exit.isFailure(exit)).toBe(true)
        const defect = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
        expect(defect).toBeInstanceOf(RowsNotDecoded)
        expect(String((defect as Error).message)).toBe("rows the statement's schema refuses: secret: Expected string")
        expect(String((defect as Error).message)).not.toContain("1234567")
      }))
  }
})
