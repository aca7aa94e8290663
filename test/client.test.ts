import { makeClient, NotFoundError, withIdempotencyKey } from "@hearken/api/effect"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { baseFixture } from "./support/fixtures.js"
import { startSeededServer, useServer } from "./support/server.js"

const server = useServer(() => startSeededServer(baseFixture()))

describe("the derived typed client", () => {
  it("round-trips all four endpoints and /health", async () => {
    const result = await Effect.runPromise(Effect.gen(function*() {
      const client = yield* makeClient(server.origin)
      const health = yield* client.health()
      const boards = yield* client.widget.boards({ query: { organizationId: "org_acme" } })
      const created = yield* client.widget.feedback({
        payload: { organizationId: "org_acme", boardId: "b_feat", title: "From the client", content: "<p>typed</p>", metadata: { via: "client" } }
      })
      const suggestions = yield* client.widget.suggestions({
        payload: { organizationId: "org_acme", boardId: "b_feat", title: "from the client", content: "" }
      })
      const updates = yield* client.widget.updates({ query: { organizationId: "org_acme" } })
      return { health, boards, created, suggestions, updates }
    }))
    expect(result.health).toEqual({ status: "ok" })
    expect(result.boards.map((b) => b.id)).toEqual(["b_bugs", "b_feat", "b_same_time_a", "b_same_time_b"])
    expect(result.created).toMatchObject({ title: "From the client", slug: "from-the-client", boardId: "b_feat", organizationId: "org_acme" })
    expect(result.suggestions.map((s) => s.id)).toEqual([result.created.id])
    expect(result.updates).toEqual([])
  })

  it("fails with NotFoundError that can be caught by its tag", async () => {
    const outcome = await Effect.runPromise(Effect.gen(function*() {
      const client = yield* makeClient(server.origin)
      return yield* client.widget.feedback({
        payload: { organizationId: "org_acme", boardId: "b_missing", title: "x", content: "" }
      }).pipe(
        Effect.map(() => "created"),
        Effect.catchTag("NotFoundError", (error) => Effect.succeed(error))
      )
    }))
    expect(outcome).toBeInstanceOf(NotFoundError)
    expect(outcome).toMatchObject({ _tag: "NotFoundError", message: "boardId: no such board in this organization" })
  })

  it("fails with DataValidationError and UnauthorizedError as typed errors", async () => {
    const tags = await Effect.runPromise(Effect.gen(function*() {
      const client = yield* makeClient(server.origin)
      const privateBoard = yield* client.widget.feedback({
        payload: { organizationId: "org_acme", boardId: "b_private", title: "x", content: "" }
      }).pipe(Effect.flip)
      const token = yield* client.widget.feedback({
        payload: { organizationId: "org_acme", boardId: "b_feat", title: "x", content: "", token: "abc" }
      }).pipe(Effect.flip)
      return [privateBoard._tag, token._tag]
    }))
    expect(tags).toEqual(["DataValidationError", "UnauthorizedError"])
  })

  it("sends withIdempotencyKey's key: a retry with it answers the first post, and another key makes another", async () => {
    const payload = { organizationId: "org_acme", boardId: "b_feat", title: "Once only", content: "<p>retried</p>" }
    const [first, retried, other] = await Effect.runPromise(Effect.gen(function*() {
      const client = yield* makeClient(server.origin)
      const send = (key: string) => client.widget.feedback({ payload }).pipe(withIdempotencyKey(key))
      return [yield* send("effect-client-1"), yield* send("effect-client-1"), yield* send("effect-client-2")]
    }))
    expect(retried).toEqual(first)
    expect(other.id).not.toBe(first!.id)
    const rows = await server.db.query<{ id: string }>((sql) => sql`SELECT id FROM posts WHERE title = 'Once only' ORDER BY id`)
    expect(rows.map((row) => row.id).sort()).toEqual([first!.id, other!.id].sort())
  })
})
