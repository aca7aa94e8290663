/** A small fixture most test files start from: two organizations, public and private boards. */
export const baseFixture = () => ({
  organizations: [
    {
      id: "org_acme",
      name: "Acme",
      jwtSecrets: ["acme-current-secret-0123456789abcdef0123"],
      statuses: [
        { id: "st_acme_new", name: "New" },
        { id: "st_acme_open", name: "Open", isDefault: true },
        { id: "st_acme_done", name: "Done" }
      ],
      boards: [
        { id: "b_feat", name: "Feature requests", slug: "feature-requests", visibility: "public",
          createdAt: "2026-01-02T00:00:00.000Z", updatedAt: "2026-01-03T00:00:00.000Z" },
        { id: "b_bugs", name: "Bugs", slug: "bugs", visibility: "public",
          createdAt: "2026-01-01T00:00:00.000Z", updatedAt: "2026-01-01T00:00:00.000Z" },
        { id: "b_same_time_b", name: "Same time B", slug: "same-time-b", visibility: "public",
          createdAt: "2026-01-05T00:00:00.000Z", updatedAt: "2026-01-05T00:00:00.000Z" },
        { id: "b_same_time_a", name: "Same time A", slug: "same-time-a", visibility: "public",
          createdAt: "2026-01-05T00:00:00.000Z", updatedAt: "2026-01-05T00:00:00.000Z" },
        { id: "b_private", name: "Private roadmap", slug: "private-roadmap", visibility: "private",
          createdAt: "2026-01-01T12:00:00.000Z", updatedAt: "2026-01-01T12:00:00.000Z" }
      ],
      posts: [] as Array<Record<string, unknown>>,
      updates: [] as Array<Record<string, unknown>>
    },
    {
      id: "org_other",
      name: "Other",
      statuses: [{ id: "st_other_first", name: "First" }, { id: "st_other_second", name: "Second" }],
      boards: [
        { id: "b_other", name: "Other board", slug: "other-board", visibility: "public",
          createdAt: "2026-01-01T00:00:00.000Z", updatedAt: "2026-01-01T00:00:00.000Z" }
      ],
      posts: [] as Array<Record<string, unknown>>
    },
    {
      id: "org_nostatus",
      name: "No statuses",
      statuses: [],
      boards: [{ id: "b_nostatus", name: "Board", slug: "board", visibility: "public" }]
    }
  ]
})

/** A post of the fixture format on `b_feat` unless `extra` says otherwise. */
export const fixturePost = (id: string, title: string, content: string, extra: Record<string, unknown> = {}) =>
  ({ id, boardId: "b_feat", title, content, ...extra })
