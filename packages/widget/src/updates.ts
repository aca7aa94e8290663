/**
 * The changelog tab (`updates.js`), a module of its own that the widget
 * fetches when the tab is first opened: most visitors never open it, and the
 * first download stays small. Revalidated with `If-None-Match` each time the
 * tab is opened again.
 */
import type { Context } from "./context.js"
import { external, h } from "./dom.js"
import { httpUrl, linkOf } from "./links.js"
import css from "./updates.css"
import type { Update } from "./options.js"

/** The changelog of the widget `c`, in `list`, with `status` saying when it loads, failed or is empty. */
export const changelog = (c: Context, status: HTMLElement, list: HTMLElement): () => Promise<void> => {
  const { client, options, t } = c
  let cache: { etag: string | undefined; value: ReadonlyArray<Update> } | undefined
  let loading = false
  const dateFormat = new Intl.DateTimeFormat(c.language.tag, { dateStyle: "long" })
  // The tab's own styles, in the widget's shadow root.
  list.getRootNode().appendChild(h("style", {}, css))

  const render = (updates: ReadonlyArray<Update>) => {
    status.textContent = updates.length === 0 ? t("nothingNew") : ""
    list.replaceChildren(...updates.map((update) => {
      const body = h("div", { class: "content", dir: "auto" })
      body.innerHTML = update.content // sanitized by the server (docs/api.md: "Fields")
      const url = linkOf(options.updateUrl, update, options.linkBase)
      const cover = update.imageUrl ? httpUrl(update.imageUrl, options.linkBase) : undefined
      // Decorative: the entry's title says what it shows. One that fails to load leaves no empty box.
      const image = cover === undefined ? undefined : h("img", { class: "cover", src: cover, alt: "", loading: "lazy", decoding: "async" })
      image?.addEventListener("error", () => image.remove())
      return h("li", {},
        h("h2", { dir: "auto" }, ...url === undefined ? [update.title] : [external(url, t, update.title)]),
        update.publishedAt === undefined ? ""
          : h("time", { class: "muted", datetime: update.publishedAt }, dateFormat.format(new Date(update.publishedAt))),
        image ?? "",
        body)
    }))
  }

  return async () => {
    if (loading) return
    loading = true
    if (cache === undefined) status.textContent = t("loading")
    try {
      const answer = await client.updates({ organizationId: options.organizationId }, { ifNoneMatch: cache?.etag })
      if (!answer.ok) {
        status.textContent = cache === undefined ? t("updatesFailed") : ""
        c.alert(answer.error)
        c.failed("updates", answer.error)
        return
      }
      if ("notModified" in answer) return
      cache = { etag: answer.etag, value: answer.value }
      render(answer.value)
    } finally {
      loading = false
    }
  }
}
