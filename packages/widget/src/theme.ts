/**
 * Light, dark, or the visitor's `prefers-color-scheme` followed live; and an
 * accent colour given by the host, with the text on it and the text in it
 * picked to keep WCAG AA contrast (4.5:1) in the theme shown.
 *
 * The colours themselves are CSS custom properties (`styles.css`); this
 * sets the class `dark` on the widget's root and, for an accent, three of
 * the `--hearken-…` properties on it.
 */
export type Theme = "light" | "dark" | "auto"

type Rgb = readonly [number, number, number]

let context: CanvasRenderingContext2D | null | undefined

/** Any CSS colour as sRGB (the canvas parses it), or undefined if it is not a colour. */
const rgbOf = (color: string): Rgb | undefined => {
  context ??= document.createElement("canvas").getContext("2d", { willReadFrequently: true })
  if (!context || !CSS.supports("color", color)) return undefined
  context.clearRect(0, 0, 1, 1)
  context.fillStyle = color
  context.fillRect(0, 0, 1, 1)
  const [r, g, b] = context.getImageData(0, 0, 1, 1).data
  return [r!, g!, b!]
}

/** WCAG 2 relative luminance. */
const luminance = (rgb: Rgb) => {
  const [r, g, b] = rgb.map((v) => (v /= 255) <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4) as unknown as Rgb
  return 0.2126 * r + 0.7152 * g + 0.0722 * b
}

const contrast = (a: Rgb, b: Rgb) => {
  const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p)
  return (x! + 0.05) / (y! + 0.05)
}

const css = (rgb: Rgb) => `rgb(${rgb.join(" ")})`
const white: Rgb = [255, 255, 255]
const black: Rgb = [0, 0, 0]

/** `accent` as text on `background`: itself if it reads at 4.5:1, else mixed towards black or white until it does. */
const readable = (accent: Rgb, background: Rgb): Rgb => {
  const toward = luminance(background) > 0.18 ? black : white
  for (let t = 0; t < 1; t += 0.05) {
    const mixed = accent.map((v, i) => Math.round(v + (toward[i]! - v) * t)) as unknown as Rgb
    if (contrast(mixed, background) >= 4.5) return mixed
  }
  return toward
}

/**
 * Paints `root` in `theme` and keeps it painted; returns what undoes the
 * listener. `accent` is the host's colour, if any.
 */
export const applyTheme = (root: HTMLElement, theme: Theme, accent: string | undefined): () => void => {
  const scheme = matchMedia("(prefers-color-scheme: dark)")
  const accentRgb = accent === undefined ? undefined : rgbOf(accent)
  const paint = () => {
    root.classList.toggle("dark", theme === "dark" || (theme === "auto" && scheme.matches))
    if (accentRgb === undefined) return
    root.style.setProperty("--hearken-accent", css(accentRgb))
    root.style.setProperty("--hearken-on-accent", css(contrast(accentRgb, white) >= contrast(accentRgb, black) ? white : black))
    root.style.removeProperty("--hearken-accent-text")
    const background = rgbOf(getComputedStyle(root).backgroundColor)
    if (background) root.style.setProperty("--hearken-accent-text", css(readable(accentRgb, background)))
  }
  paint()
  if (theme !== "auto") return () => {}
  scheme.addEventListener("change", paint)
  return () => scheme.removeEventListener("change", paint)
}
