/**
 * A module built next to `widget.js` (`locales/de.js`, `accent.js`), imported
 * when first needed; undefined if it cannot be loaded.
 */
export const importSibling = async <Module>(path: string): Promise<Module | undefined> => {
  try {
    return await import(new URL(`./${path}`, import.meta.url).href)
  } catch {
    return undefined
  }
}
