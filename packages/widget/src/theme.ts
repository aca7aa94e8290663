/**
 * Light, dark, or the visitor's `prefers-color-scheme` followed live. The
 * colours themselves are CSS custom properties (`styles.css`); this sets the
 * class `dark` on the widget's root, and has the host's accent (`accent.ts`)
 * painted again when the theme changes, as its text colour depends on the
 * background.
 */
export type Theme = "light" | "dark" | "auto"

/** Paints `root` in `theme` and keeps it painted; returns what undoes the listener. */
export const applyTheme = (root: HTMLElement, theme: Theme, paintAccent: ((root: HTMLElement) => void) | undefined): () => void => {
  const scheme = matchMedia("(prefers-color-scheme: dark)")
  const paint = () => {
    root.classList.toggle("dark", theme === "dark" || (theme === "auto" && scheme.matches))
    paintAccent?.(root)
  }
  paint()
  if (theme !== "auto") return () => {}
  scheme.addEventListener("change", paint)
  return () => scheme.removeEventListener("change", paint)
}
