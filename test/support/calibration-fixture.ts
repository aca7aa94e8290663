/**
 * Boards for the calibration tests (`test/suggestions-calibration.test.ts`):
 * short product-feedback posts, each a title and one sentence. `b_mixed` has
 * 25 posts on unrelated topics (and private ones), `b_notify` 25 different
 * requests about notifications, `b_tiny` 3 posts; `b_hidden` is a private
 * board.
 */

export interface CalibrationPost {
  readonly id: string
  readonly title: string
  readonly text: string
}

/** Posts from `[id, title, text]` rows, their ids prefixed. */
export const posts = (prefix: string, list: ReadonlyArray<readonly [string, string, string]>): Array<CalibrationPost> =>
  list.map(([id, title, text]) => ({ id: `${prefix}_${id}`, title, text }))

export const mixedPosts = posts("p_mix", [
  ["dark", "Dark mode", "Please offer a dark colour scheme; the white pages hurt my eyes late in the evening."],
  ["csv", "Export invoices to CSV", "Our accountant wants every invoice as a spreadsheet at the end of the month."],
  ["sso", "Single sign-on with Okta", "We would like our staff to log in through our identity provider."],
  ["slack", "Slack integration", "Post a message in our team channel whenever a ticket is created."],
  ["offline", "Offline mode for the iPhone app", "Field crews lose signal underground and cannot open their tasks."],
  ["2fa", "Two-factor authentication", "Require an authenticator code for admins when they sign in."],
  ["gantt", "Gantt chart view", "Show projects on a timeline with the dependencies between tasks."],
  ["accents", "Search ignores accents", "Looking up cafe should also find café in titles."],
  ["recurring", "Recurring tasks", "Let a weekly chore repeat automatically every Monday."],
  ["vat", "VAT number on receipts", "European customers need their tax ID printed on every receipt."],
  ["palette", "Command palette", "Power users want Cmd+K to jump anywhere without the mouse."],
  ["calendar", "Google Calendar sync", "Due dates should show up as events in my calendar."],
  ["webhooks", "Webhooks for status changes", "Call our URL when a ticket moves to another column."],
  ["japanese", "Translate the widget into Japanese", "Half of our visitors read Japanese and the labels are only in English."],
  ["attachments", "Bigger attachment limit", "Files over 10 MB are rejected, but our design mockups are larger."],
  ["csat", "Satisfaction survey after a reply", "Ask the customer to rate the answer once the conversation is closed."],
  ["copy", "Duplicate a project", "Copy a project with all its cards as a starting point."],
  ["crash", "App crashes on launch", "Since the last update, the Android app closes right after the splash screen."],
  ["print", "Print a board", "We pin a paper copy of the sprint on the wall before each planning meeting."],
  ["emoji", "Emoji reactions on comments", "A quick thumbs up would replace many short thank-you replies."],
  ["time", "Time tracking per task", "Log billable hours and add them up for each client."],
  ["nonprofit", "Nonprofit discount", "Charities on a tight budget would love a cheaper plan."],
  ["font", "Larger font size", "The text is too small on a 4K monitor; let us zoom the interface."],
  ["api", "Public REST API", "We want to create and update records from our own scripts."],
  ["archive", "Archive old projects", "Hide finished projects from the sidebar without deleting them."]
])

export const notifyPosts = posts("p_ntf", [
  ["digest", "Daily email digest", "Bundle all updates into one summary email each morning."],
  ["weekend", "Mute notifications on weekends", "Nobody wants to be pinged on Saturday and Sunday."],
  ["push", "Push notifications on Android", "Alert me on my phone when someone replies."],
  ["desktop", "Desktop notifications in the browser", "Show a popup when a new ticket arrives while the tab is in the background."],
  ["mention", "Notify me when I am mentioned", "An @mention in a comment should always send an alert."],
  ["unsubscribe", "Unsubscribe link in every email", "Let recipients opt out of a single kind of notification."],
  ["quiet", "Quiet hours", "Hold notifications between 10 pm and 7 am in my time zone."],
  ["read", "Mark all notifications as read", "Clearing the bell icon one item at a time is tedious."],
  ["sms", "SMS alerts for urgent tickets", "Send a text message when a high-priority ticket is opened."],
  ["slack", "Slack notifications per channel", "Route each project's alerts to its own Slack channel."],
  ["reminder", "Reminder before a due date", "Nudge the assignee one day before the deadline."],
  ["sound", "Notification sound settings", "Let me choose or turn off the chime for new messages."],
  ["weekly", "Weekly summary for managers", "Team leads want a recap of what their people finished this week."],
  ["followers", "Notify followers when the status changes", "Everyone who voted should hear when the idea ships."],
  ["snooze", "Snooze a notification", "Remind me about this later today instead of now."],
  ["german", "Email notifications in German", "Our users receive alerts in English even though their language is German."],
  ["comments", "Notification for new comments on my posts", "Tell me when someone comments on feedback I submitted."],
  ["badge", "Badge count on the app icon", "Show the number of unread notifications on the home screen."],
  ["project", "Per-project notification preferences", "I want alerts for one project but not for the others."],
  ["teams", "Microsoft Teams alerts", "Post notifications to a Teams channel instead of email."],
  ["export", "Notify when an export is ready", "Large exports take minutes, so send me a link once the file is done."],
  ["sla", "Escalation alert when an SLA is missed", "Warn the manager when a ticket waits too long for a first response."],
  ["assigned", "Notifications for assigned tasks only", "Stop alerting me about tasks that other people own."],
  ["meetings", "Do not disturb during meetings", "Hold alerts while a calendar event is in progress."],
  ["webhook", "Webhook when a notification is sent", "Forward every alert to our own system as JSON."]
])

export const tinyPosts = posts("p_tiny", [
  ["pdf", "Export invoices to PDF", "Our accountant needs every invoice as a PDF file."],
  ["shortcuts", "Keyboard shortcuts in the editor", "Bold and italic with Ctrl+B and Ctrl+I."],
  ["guests", "Invite guests to a project", "Let clients follow one project without a paid seat."]
])

/** Private posts on `b_mixed`: never embedded, never counted, never suggested. */
export const privatePosts = posts("p_priv", [
  ["trello", "Trello import", "Bring our boards, cards and labels over from Trello."],
  ["invoices", "Export invoices to CSV for the auditors", "The auditors want every invoice as a spreadsheet, privately."]
])

/** Posts of the private board `b_hidden`. */
export const hiddenPosts = posts("p_hid", [
  ["one", "Merge duplicate posts", "Combine two ideas that ask for the same thing."],
  ["two", "Voting limits", "Give each customer ten votes to spend."],
  ["three", "Custom domain for the portal", "Serve the feedback board from our own domain."]
])

export const calibrationOrganization = "org_cal"

const fixturePosts = (boardId: string, list: ReadonlyArray<CalibrationPost>, extra: Record<string, unknown> = {}) =>
  list.map((p, i) => ({
    id: p.id,
    boardId,
    title: p.title,
    content: `<p>${p.text}</p>`,
    // One minute apart: a stable order for the lexical ties.
    createdAt: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
    ...extra
  }))

export const calibrationFixture = () => ({
  organizations: [{
    id: calibrationOrganization,
    name: "Calibration",
    statuses: [{ id: "st_cal_open", name: "Open", isDefault: true }],
    boards: [
      { id: "b_mixed", name: "Mixed", slug: "mixed", visibility: "public" },
      { id: "b_notify", name: "Notifications", slug: "notifications", visibility: "public" },
      { id: "b_tiny", name: "Tiny", slug: "tiny", visibility: "public" },
      { id: "b_hidden", name: "Hidden", slug: "hidden", visibility: "private" }
    ],
    posts: [
      ...fixturePosts("b_mixed", mixedPosts),
      ...fixturePosts("b_mixed", privatePosts, { visibility: "private" }),
      ...fixturePosts("b_notify", notifyPosts),
      ...fixturePosts("b_tiny", tinyPosts),
      ...fixturePosts("b_hidden", hiddenPosts)
    ]
  }]
})

/** Public posts on public boards, by board: what each calibration row counts. */
export const publicPosts: Readonly<Record<string, number>> = {
  b_mixed: mixedPosts.length,
  b_notify: notifyPosts.length,
  b_tiny: tinyPosts.length
}

/**
 * `b_seven`: 7 posts on unrelated topics, to which a visitor adds two
 * identical posts (`visitorCopy`) in `test/suggestions-background.test.ts`.
 */
export const sevenPosts = posts("p_sev", [
  ["pdf", "Export invoices to PDF", "Our accountant needs every invoice as a PDF file."],
  ["shortcuts", "Keyboard shortcuts in the editor", "Bold and italic with Ctrl+B and Ctrl+I."],
  ["guests", "Invite guests to a project", "Let clients follow one project without a paid seat."],
  ["slack", "Slack integration", "Post a message in our team channel whenever a ticket is created."],
  ["2fa", "Two-factor authentication", "Require an authenticator code for admins when they sign in."],
  ["gantt", "Gantt chart view", "Show projects on a timeline with the dependencies between tasks."],
  ["recurring", "Recurring tasks", "Let a weekly chore repeat automatically every Monday."]
])

/**
 * `b_near`: the 7 posts of `b_seven`, to which a visitor adds five pairs of
 * near-exact copies (`visitorNearCopies`) in `test/suggestions-background.test.ts`.
 */
export const nearPosts = posts("p_near", sevenPosts.map((p) => [p.id.slice("p_sev_".length), p.title, p.text] as const))

/**
 * What a visitor posts on `b_near`: five requests, each twice, the second
 * time with one word added, replaced or removed.
 */
export const visitorNearCopies: ReadonlyArray<readonly [{ readonly title: string; readonly text: string }, { readonly title: string; readonly text: string }]> = [
  [
    { title: "Refund my subscription", text: "I was charged twice this month, please give my money back." },
    { title: "Refund my subscription now", text: "I was charged twice this month, please give my money back." }
  ],
  [
    { title: "Calendar sync", text: "Sync the due dates with Google Calendar." },
    { title: "Calendar sync", text: "Sync the due dates with Outlook Calendar." }
  ],
  [
    { title: "Faster page loading", text: "The dashboard takes ten seconds to open in the morning." },
    { title: "Faster page loading", text: "The dashboard takes twenty seconds to open in the morning." }
  ],
  [
    { title: "Mobile app for Android", text: "We would like to read the updates on our phones too." },
    { title: "Mobile app for Android", text: "We would like to read the updates on our phones." }
  ],
  [
    { title: "Print a board as a poster", text: "For the office wall, once every week." },
    { title: "Print a board as a large poster", text: "For the office wall, once every week." }
  ]
]

/** What a visitor posts twice, word for word. */
export const visitorCopy = { title: "Refund my subscription", text: "I was charged twice this month, please give my money back." }

/** `b_dups`: 9 posts, three of them asking for a dark theme in their own words (real duplicates). */
export const duplicatePosts = posts("p_dup", [
  ["dark", "Dark mode", "Please offer a dark colour scheme; the white pages hurt my eyes late in the evening."],
  ["dim", "Dimmer colours", "A dark palette would be kinder to the eyes after sunset."],
  ["theme", "Dark theme for the app", "The bright white screens hurt my eyes when I work in the evening."],
  ["pdf", "Export invoices to PDF", "Our accountant needs every invoice as a PDF file."],
  ["shortcuts", "Keyboard shortcuts in the editor", "Bold and italic with Ctrl+B and Ctrl+I."],
  ["guests", "Invite guests to a project", "Let clients follow one project without a paid seat."],
  ["slack", "Slack integration", "Post a message in our team channel whenever a ticket is created."],
  ["2fa", "Two-factor authentication", "Require an authenticator code for admins when they sign in."],
  ["gantt", "Gantt chart view", "Show projects on a timeline with the dependencies between tasks."]
])

/** The organization whose public board a visitor floods with copies. */
export const floodedOrganization = "org_flood"

/** `b_flood`: 10 posts of `org_flood` before the flood. */
export const floodPosts = posts("p_fl", mixedPosts.slice(0, 10).map((p) => [p.id.slice("p_mix_".length), p.title, p.text] as const))

/**
 * `calibrationFixture`, with `b_seven`, `b_dups` and `b_near` on its organization, and
 * `org_flood` with its public board `b_flood`.
 */
export const backgroundFixture = () => {
  const fixture = calibrationFixture()
  const [organization] = fixture.organizations
  organization!.boards.push(
    { id: "b_seven", name: "Seven", slug: "seven", visibility: "public" },
    { id: "b_dups", name: "Duplicates", slug: "duplicates", visibility: "public" },
    { id: "b_near", name: "Near", slug: "near", visibility: "public" }
  )
  organization!.posts.push(...fixturePosts("b_seven", sevenPosts), ...fixturePosts("b_dups", duplicatePosts), ...fixturePosts("b_near", nearPosts))
  return {
    organizations: [...fixture.organizations, {
      id: floodedOrganization,
      name: "Flooded",
      statuses: [{ id: "st_flood_open", name: "Open", isDefault: true }],
      boards: [{ id: "b_flood", name: "Flooded", slug: "flooded", visibility: "public" }],
      posts: fixturePosts("b_flood", floodPosts)
    }]
  }
}
