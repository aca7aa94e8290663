import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { ids } from "./support/client.js"
import { baseFixture, fixturePost } from "./support/fixtures.js"
import { inMemoryServer, post } from "./support/inMemory.js"

const p = fixturePost

const fixture = baseFixture()
fixture.organizations[0]!.posts = [
  p("p_dark", "Dark mode", "<p>Please add a dark theme for the dashboard</p>", { createdAt: "2026-01-01T00:00:00.000Z" }),
  p("p_dark2", "Dark theme for the widget", "<p>Our site is dark, the widget is bright</p>", { createdAt: "2026-01-02T00:00:00.000Z" }),
  p("p_export", "Export to CSV", "<p>Export all posts to a spreadsheet</p>"),
  p("p_slack", "Slack integration", "<p>Post new feedback to a Slack channel</p>"),
  p("p_fr", "Mode sombre", "<p>Un thème sombre pour l'application, s'il vous plaît</p>"),
  p("p_de", "Dunkelmodus für die Übersicht", "<p>Bitte einen dunklen Modus einbauen</p>"),
  p("p_ru", "Тёмная тема", "<p>Добавьте тёмную тему, пожалуйста</p>"),
  p("p_private", "Dark mode for admins (private)", "<p>secret dark mode</p>", { visibility: "private" }),
  p("p_bug_dark", "Dark mode crash", "<p>dark mode crashes</p>", { boardId: "b_bugs" }),
  p("p_secret_board", "Dark mode on a private board", "<p>dark</p>", { boardId: "b_private" }),
  ...Array.from({ length: 8 }, (_, i) => p(`p_many_${i}`, `Notification sound option ${i}`, "<p>notification sound</p>"))
]
fixture.organizations[1]!.posts = [
  { id: "p_other_dark", boardId: "b_other", title: "Dark mode", content: "<p>dark mode please</p>" }
]

const suggest = (body: Record<string, unknown>) =>
  post("suggestions", { organizationId: "org_acme", boardId: "b_feat", content: "", ...body })


layer(inMemoryServer(fixture), { excludeTestServices: true })("POST /suggestions (lexical)", (it) => {
  it.effect("finds similar public posts of the board, best first, with exactly the spec's fields", () =>
    Effect.gen(function*() {
      const res = yield* suggest({ title: "dark mode", content: "a dark theme please" })
      expect(res.status).toBe(200)
      expect(ids(res)[0]).toBe("p_dark")
      expect(ids(res)).toContain("p_dark2")
      expect(res.body[0]).toEqual({ id: "p_dark", title: "Dark mode", excerpt: "Please add a dark theme for the dashboard", slug: "dark-mode" })
    }))

  it.effect("never returns private posts, posts of other boards, or other organizations' posts", () =>
    Effect.gen(function*() {
      const res = yield* suggest({ title: "dark mode", content: "dark mode dark theme crash admins private board" })
      for (const id of ["p_private", "p_bug_dark", "p_secret_board", "p_other_dark"]) expect(ids(res)).not.toContain(id)
    }))

  it.effect("answers [] for a private, unknown or foreign board", () =>
    Effect.gen(function*() {
      for (const boardId of ["b_private", "b_nope", "b_other"]) {
        const res = yield* suggest({ boardId, title: "dark mode" })
        expect(res).toMatchObject({ status: 200, body: [] })
      }
      const foreignOrg = yield* suggest({ organizationId: "org_other", boardId: "b_feat", title: "dark mode" })
      expect(foreignOrg.body).toEqual([])
    }))

  it.effect("returns at most 5 items", () =>
    Effect.gen(function*() {
      const res = yield* suggest({ title: "notification sound option", content: "notification sound" })
      expect(res.body).toHaveLength(5)
    }))

  it.effect("matches words in other languages", () =>
    Effect.gen(function*() {
      expect(ids(yield* suggest({ title: "thème sombre" }))).toContain("p_fr")
      expect(ids(yield* suggest({ title: "dunklen Modus" }))).toContain("p_de")
      expect(ids(yield* suggest({ title: "тёмная тема" }))).toContain("p_ru")
    }))

  it.effect("tolerates a typo through trigram similarity", () =>
    Effect.gen(function*() {
      expect(ids(yield* suggest({ title: "Slak integraton" }))).toContain("p_slack")
    }))

  it.effect("matches on the draft body as well as the title", () =>
    Effect.gen(function*() {
      expect(ids(yield* suggest({ title: "Idea", content: "<p>a <b>spreadsheet</b> export</p>" }))).toContain("p_export")
    }))

  it.effect("answers [] for an empty draft and for punctuation only", () =>
    Effect.gen(function*() {
      expect((yield* suggest({ title: "" })).body).toEqual([])
      expect((yield* suggest({ title: "?!'\"&|:*()<>", content: "'''" })).body).toEqual([])
    }))

  it.effect("is not confused by tsquery syntax in the draft", () =>
    Effect.gen(function*() {
      const res = yield* suggest({ title: "dark & | ! ( ) : * ' mode <-> \\", content: "' OR 1=1 --" })
      expect(res.status).toBe(200)
      expect(ids(res)[0]).toBe("p_dark")
    }))

  it.effect("answers 200 to any script, and 400 to a draft carrying half a character (a lone surrogate)", () =>
    Effect.gen(function*() {
      for (const title of ["𞤀𞤁𞤂 𞤃𞤄", "हिन्दी में खोज", "ค้นหาไม่เจอ"]) {
        const res = yield* suggest({ title, content: title })
        expect(res.status).toBe(200)
        expect(Array.isArray(res.body)).toBe(true)
      }
      const half = yield* suggest({ title: "half \ud83a a character", content: "x" })
      expect(half.status).toBe(400)
      expect(half.body).toEqual({ _tag: "DataValidationError", message: "title: Expected a string without lone UTF-16 surrogates" })
    }))
})
