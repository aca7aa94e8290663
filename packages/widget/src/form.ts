/**
 * The post tab's elements: the form (the boards, the title, the details with
 * each one's error and live count, the similar posts and the button), and
 * the success message that replaces it. Their behaviour is the controller's.
 */
import type { Context } from "./context.js"
import { h } from "./dom.js"

/** What the controller works with, in this order. */
export type FormView = [
  panel: HTMLElement,
  form: HTMLFormElement,
  title: HTMLInputElement,
  content: HTMLTextAreaElement,
  /** Similar posts; polite, so a screen reader hears them after the visitor stops typing. */
  similar: HTMLElement,
  submit: HTMLButtonElement,
  /** The success message; a status region, so it is announced without moving focus. */
  success: HTMLElement,
  again: HTMLButtonElement
]

/** The post tab around the boards' `fieldset`. Each field's error is `NAME-error`, its count `NAME-count`. */
export const form = (c: Context, fieldset: HTMLFieldSetElement): FormView => {
  const { t, id } = c
  const field = (name: "title" | "content", label: string, control: HTMLInputElement | HTMLTextAreaElement) => {
    control.id = id(name)
    control.name = name
    control.setAttribute("aria-describedby", `${id(`${name}-error`)} ${id(`${name}-count`)}`)
    return h("div", { class: "field" }, h("label", { for: control.id }, label), control,
      h("p", { class: "error", id: id(`${name}-error`) }),
      h("p", { class: "muted count", id: id(`${name}-count`) }))
  }
  // No maxlength: browsers count UTF-16 units, the server counts code points (200 emoji make a valid title).
  // The limits are checked in code points, against the table the API's schemas use (`checks.ts`).
  // `dir="auto"` on what the visitor types and on what the API answers: an English title reads left to right in an Arabic widget.
  const title = h("input", { type: "text", autocomplete: "off", required: true, dir: "auto" })
  const content = h("textarea", { rows: "4", dir: "auto" })
  const similar = h("div", { class: "similar", "aria-live": "polite", id: id("similar") })
  const submit = h("button", { type: "submit", class: "primary" }, t("submit"))
  const element = h("form", { novalidate: true, "aria-labelledby": id("form-title") },
    h("h2", { id: id("form-title") }, t("formTitle")),
    fieldset,
    field("title", t("title"), title),
    field("content", t("details"), content),
    similar,
    submit)
  const success = h("div", { class: "success", role: "status", id: id("success") })
  const again = h("button", { type: "button", class: "secondary", hidden: true }, t("sendMore"))
  const panel = h("section", { role: "tabpanel", id: id("panel-post"), "aria-labelledby": id("tab-post") },
    success, again, element)
  return [panel, element, title, content, similar, submit, success, again]
}
