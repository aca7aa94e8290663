/**
 * Boards for the cluster tests (`test/suggestions-clusters.test.ts`): a
 * product's public feedback, where one request is often asked several times
 * in other words. `b_dark` holds 7 posts asking for a dark theme among 15
 * on other topics; `b_repeat` 3 posts asking for recurring tasks among 20
 * others, some sharing a word or two with the drafts about them; `b_mixed`
 * 25 posts on unrelated topics.
 *
 * The ranking puts the cluster first, so that which of it is shown is the
 * selection's doing: the lexical candidates (`Suggestions.rank`) of the
 * tests' drafts, when this was written, were the 7 dark posts (coverage
 * 0.32 to 0.07) above any other (0.03); the 3 recurring-task posts above
 * any other, to the draft in their words (0.37, 0.37, 0.32; then 0.18) and
 * to the one in other words (0.29, 0.26, 0.15; then 0.13). The concept
 * embedder's nearest 6 to the dark draft are dark posts ("Darker interface
 * option" has none of its concepts).
 */

import { type CalibrationPost, posts } from "./calibration-fixture.ts"

export type ClusterPost = CalibrationPost

/** Seven ways of asking for a dark theme. */
export const darkPosts = posts("p_dark", [
  ["mode", "Dark mode", "Please add a dark mode. The white pages are blinding when I work late at night."],
  ["night", "Night mode for the dashboard", "A night mode with a black background would be much easier on the eyes."],
  ["theme", "Dark theme", "Our support team works evenings and the bright interface gives everyone eye strain."],
  ["black", "Black colour scheme", "Offer black and dark grey colours as an alternative to the white layout."],
  ["system", "Follow the system's dark setting", "My laptop switches to dark at sunset; the app should switch its colours too."],
  ["oled", "Dark colours for OLED phones", "A true black theme would save battery on OLED screens."],
  ["darker", "Darker interface option", "Everything is so bright and white. A darker option with light text on a dark background, please."]
])

export const darkOthers = posts("p_dko", [
  ["csv", "Export tasks to CSV", "Our accountant wants a spreadsheet of all tasks at the end of the month."],
  ["sso", "Single sign-on through Okta", "Staff should log in with our identity provider."],
  ["recurring", "Recurring tasks", "Let a weekly chore repeat every Monday automatically."],
  ["calendar", "Google Calendar sync", "Due dates should appear as events in my calendar."],
  ["webhooks", "Webhooks for status changes", "Call our URL whenever a card moves to another column."],
  ["uploads", "Bigger file uploads", "Design mockups over 10 MB are rejected."],
  ["threads", "Comment threads", "Replies to a comment should be nested under it."],
  ["api", "Public REST API", "We want to create and update tasks from our own scripts."],
  ["owners", "Assign a task to several people", "Pair work needs two owners on one card."],
  ["subtasks", "Subtasks", "Break a big task into smaller steps, each with its own checkbox."],
  ["guests", "Invite guests", "Let clients follow one project without a paid seat."],
  ["undo", "Undo for deleted cards", "I removed a card by mistake and could not get it back."],
  ["templates", "Board templates", "Start a new project from a saved layout of columns and labels."],
  ["nonprofit", "Nonprofit pricing", "Charities on a tight budget would love a discount."],
  ["2fa", "Two-factor authentication", "Ask for a one-time code when someone signs in from a new device."]
])

/** Three ways of asking for recurring tasks: duplicates of one another. */
export const repeatPosts = posts("p_rep", [
  ["repeating", "Repeating tasks", "We create the same checklist every Monday by hand; a task should repeat on a schedule."],
  ["chores", "Recurring weekly chores", "Things like the Friday backup check come back each week, and we type them in again."],
  ["recur", "Tasks that repeat on their own", "Allow a task to be created again every day, week or month."]
])

/** Other requests; some share a word or two with a draft about recurring tasks ("tasks", "week", "every"). */
export const repeatOthers = posts("p_rpo", [
  ["templates", "Task templates", "Save a task with its checklist and reuse it for each new hire."],
  ["weeknumbers", "Week numbers in the calendar", "Show ISO week numbers next to each row of the month view."],
  ["sort", "Sort tasks by due date", "The list should put the most urgent tasks at the top."],
  ["digest", "Weekly email digest", "One summary email every Friday instead of a message for every change."],
  ["dark", "Dark mode", "Please offer a dark colour scheme for late evenings."],
  ["excel", "Export to Excel", "Our finance team needs the project list as a spreadsheet."],
  ["slack", "Slack integration", "Post a message in our channel when a task is completed."],
  ["offline", "Offline mode for the iPhone app", "Field crews lose signal underground and cannot open their tasks."],
  ["gantt", "Gantt chart view", "Show projects on a timeline with the dependencies between them."],
  ["time", "Time tracking", "Log hours against a project and see the total per client."],
  ["emoji", "Emoji reactions", "A thumbs up on a comment would replace many short replies."],
  ["fields", "Custom fields", "Add a dropdown for the cost centre of each project."],
  ["font", "Larger font size", "The text is too small on a 4K monitor."],
  ["print", "Print a board", "We pin a paper copy of the sprint on the wall before planning."],
  ["sso", "Single sign-on with Azure AD", "Staff should sign in with their Microsoft account."],
  ["crash", "Mobile app crashes on launch", "The Android app closes right after the splash screen."],
  ["accents", "Search ignores accents", "Looking up cafe should also find café."],
  ["api", "Public API", "We want to create records from our own scripts."],
  ["archive", "Archive finished projects", "Hide old projects from the sidebar without deleting them."],
  ["nonprofit", "Nonprofit discount", "Charities on a tight budget would love a cheaper plan."]
])

/** 25 requests on as many topics (a help desk's board). */
export const mixedPosts = posts("p_mix", [
  ["trello", "Import from Trello", "Bring our boards, cards and checklists over from Trello in one go."],
  ["2fa", "Two-factor authentication", "Require an authenticator app code when admins sign in."],
  ["slack", "Slack notifications", "Post a message in our channel when a ticket is assigned to me."],
  ["offline", "Offline mode on Android", "Our technicians work in basements without signal and can't open their jobs."],
  ["bulk", "Bulk edit tickets", "Select fifty tickets and change their priority in one step."],
  ["gantt", "Gantt chart", "Show the project plan on a timeline with dependencies."],
  ["emoji", "Emoji reactions", "Let us react with a thumbs up instead of writing a reply."],
  ["attachments", "Search inside attachments", "Find words in PDFs and Word files attached to tickets."],
  ["time", "Time tracking", "Log billable hours against each task and total them per client."],
  ["filters", "Saved filters", "Keep my favourite ticket filters and share them with the team."],
  ["shortcuts", "Keyboard shortcuts", "Power users want to close a ticket and jump to the next without the mouse."],
  ["fields", "Custom fields on tickets", "We need a dropdown for the product version a customer uses."],
  ["csat", "Satisfaction survey", "Ask customers to rate our answer after a ticket is closed."],
  ["spanish", "Spanish translation", "Half of our customers write in Spanish; translate the help center."],
  ["audit", "Audit log", "Admins need to see who deleted a ticket and when."],
  ["canned", "Canned responses", "Save common replies and insert them with two clicks."],
  ["merge", "Merge duplicate tickets", "The same customer often writes twice about one problem."],
  ["print", "Print a ticket", "Our warehouse staff need a paper copy with the shipping details."],
  ["calendar", "Calendar view of due dates", "See which tickets are due this week on a monthly grid."],
  ["limit", "Larger attachment limit", "Videos of the bug are often over 25 MB and get rejected."],
  ["zapier", "Zapier integration", "Connect new tickets to the hundreds of apps we already use."],
  ["guests", "Read-only guests", "Let contractors see a project without editing anything."],
  ["sla", "SLA timers", "Show how long until a ticket breaches its first response target."],
  ["archive", "Archive old projects", "Hide finished projects from the sidebar without deleting them."],
  ["crash", "Mobile app crashes on launch", "Since the last update the iPhone app closes right after the splash screen."]
])

export const clustersOrganization = "org_clusters"

/** Each board's public posts, by board id. */
export const boardPosts: Readonly<Record<string, ReadonlyArray<ClusterPost>>> = {
  b_dark: [...darkPosts, ...darkOthers],
  b_repeat: [...repeatPosts, ...repeatOthers],
  b_mixed: mixedPosts
}

/** A post's slug: its id's, unique in the organization whatever its title. */
export const slugOf = (id: string) => id.replaceAll("_", "-")

export const clustersFixture = () => ({
  organizations: [{
    id: clustersOrganization,
    name: "Clusters",
    statuses: [{ id: "st_clu_open", name: "Open", isDefault: true }],
    boards: Object.keys(boardPosts).map((id) => ({ id, name: id.slice(2), slug: id.slice(2), visibility: "public" })),
    posts: Object.entries(boardPosts).flatMap(([boardId, list]) =>
      list.map((p, i) => ({
        id: p.id,
        boardId,
        title: p.title,
        content: `<p>${p.text}</p>`,
        slug: slugOf(p.id),
        // One minute apart: a stable order for the lexical ties.
        createdAt: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString()
      })))
  }]
})

/** A draft of the cluster tests (`content` as plain text, wrapped in `<p>` when sent: `clusterRequest`). */
export interface ClusterDraft {
  readonly boardId: string
  readonly title: string
  readonly content?: string
}

/** The drafts the cluster tests send. */
export const clusterDrafts = {
  dark: { boardId: "b_dark", title: "Dark theme with black colours" },
  repeatTheirWords: { boardId: "b_repeat", title: "Recurring tasks", content: "Some of our tasks repeat every week." },
  repeatOtherWords: { boardId: "b_repeat", title: "Repeat tasks automatically", content: "The same chores come back each week." },
  unrelated: {
    boardId: "b_mixed",
    title: "Pay by direct debit",
    content: "Our finance department cannot use credit cards for the yearly subscription."
  }
} as const satisfies Record<string, ClusterDraft>

/** The body of `POST /suggestions` for a draft of the cluster tests. */
export const clusterRequest = (draft: ClusterDraft) => ({
  organizationId: clustersOrganization,
  boardId: draft.boardId,
  title: draft.title,
  content: draft.content === undefined ? "" : `<p>${draft.content}</p>`
})

/**
 * What the cluster tests ask, and what a right answer is (issue 27): the
 * tests send them through HTTP, and `npm run quality` only fits selections
 * that answer them right (decision 0031).
 */
export const clusterRequirements: ReadonlyArray<{
  readonly name: string
  readonly draft: ClusterDraft
  /** `meaning`: with the concept embedder; else with words alone. */
  readonly right: (ids: ReadonlyArray<string>, meaning: boolean) => boolean
}> = [
  {
    // Four of the seven share only "dark" with the draft: the words find the others, the meaning all of them.
    name: "5 of the 7 posts close to a draft (words alone: the 3 that share its words, at least, and only dark posts)",
    draft: clusterDrafts.dark,
    right: (ids, meaning) =>
      (meaning ? ids.length === 5 : ids.length >= 3) && new Set(ids).size === ids.length && ids.every((id) => darkPosts.some((p) => p.id === id))
  },
  ...[clusterDrafts.repeatTheirWords, clusterDrafts.repeatOtherWords].map((draft) => ({
    name: `all 3 duplicates of one another to "${draft.title}"`,
    draft,
    right: (ids: ReadonlyArray<string>) => [...ids].sort().join() === repeatPosts.map((p) => p.id).sort().join()
  })),
  {
    name: "[] on a board of 25 unrelated posts",
    draft: clusterDrafts.unrelated,
    right: (ids) => ids.length === 0
  }
]
