/** The two tabs, the post and the changelog: WAI-ARIA tabs, activated as they are reached. */
import type { Context } from "./context.js"
import { h } from "./dom.js"

/**
 * The tab list over `panels` (the first selected; each labelled by its tab,
 * `tab-NAME`). `opened` hears the index of each tab selected.
 */
export const tabs = (c: Context, panels: ReadonlyArray<HTMLElement>, opened: (index: number) => void): [list: HTMLElement, focus: () => void] => {
  const { t, id } = c
  const tab = (name: string, label: string) =>
    h("button", { type: "button", role: "tab", id: id(`tab-${name}`), "aria-controls": id(`panel-${name}`) }, label)
  const all = [tab("post", t("tabPost")), tab("updates", t("tabUpdates"))]
  const list = h("div", { role: "tablist", "aria-label": t("tabs") }, ...all)
  const select = (index: number, focus: boolean) => {
    all.forEach((tab, i) => {
      tab.setAttribute("aria-selected", String(i === index))
      tab.tabIndex = i === index ? 0 : -1
      panels[i]!.hidden = i !== index
    })
    if (focus) all[index]!.focus()
    opened(index)
  }
  select(0, false)
  all.forEach((tab, i) => tab.addEventListener("click", () => select(i, false)))
  list.addEventListener("keydown", (event) => {
    const current = all.findIndex((tab) => tab.getAttribute("aria-selected") === "true")
    // Arrows follow the reading direction: in a right-to-left layout the next tab is on the left.
    const rtl = c.language.dir === "rtl"
    const next = event.key === (rtl ? "ArrowLeft" : "ArrowRight") ? current + 1
      : event.key === (rtl ? "ArrowRight" : "ArrowLeft") ? current - 1
      : event.key === "Home" ? 0
      : event.key === "End" ? all.length - 1
      : undefined
    if (next === undefined) return
    event.preventDefault()
    select((next + all.length) % all.length, true)
  })
  // The list, and what moves focus to the selected tab.
  return [list, () => all.find((tab) => tab.tabIndex === 0)?.focus()]
}
