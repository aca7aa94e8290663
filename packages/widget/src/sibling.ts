/** How long a module may take before the widget goes on without it (in English, or without the accent). */
const patienceMs = 3_000

/**
 * A module built next to `widget.js` (`locales/de.js`, `accent.js`), imported
 * when first needed; undefined if it cannot be loaded or does not come in time.
 */
export const importSibling = <Module>(path: string): Promise<Module | undefined> =>
  new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), patienceMs)
    import(new URL(`./${path}`, import.meta.url).href)
      .then(resolve, () => resolve(undefined))
      .finally(() => clearTimeout(timer))
  })
