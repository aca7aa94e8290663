/**
 * An accent colour given by the host, with the text on it and the text in it
 * picked to keep WCAG AA contrast (4.5:1) on the background shown. Its own
 * module, `accent.js`, which the widget imports only when `accent` is given:
 * the first download stays small (decision 0024).
 */
type Rgb = readonly [number, number, number]

let context: CanvasRenderingContext2D | null | undefined

/**
 * A CSS colour as sRGB, parsed by the canvas; undefined if it is not one the
 * canvas can resolve on its own (`var(…)`, `currentColor`) or is transparent.
 * Alpha is otherwise ignored.
 */
const rgbOf = (color: string): Rgb | undefined => {
  context ??= document.createElement("canvas").getContext("2d", { willReadFrequently: true })
  if (!context || /currentcolor/i.test(color)) return undefined
  // A value the canvas cannot parse leaves `fillStyle` as it was: from two starting points, it differs.
  const parsed = ["#000", "#fff"].map((start) => {
    context!.fillStyle = start
    context!.fillStyle = color
    return context!.fillStyle
  })
  if (parsed[0] !== parsed[1]) return undefined
  context.clearRect(0, 0, 1, 1)
  context.fillRect(0, 0, 1, 1)
  const [r, g, b, a] = context.getImageData(0, 0, 1, 1).data
  return a === 0 ? undefined : [r!, g!, b!]
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
 * What paints `accent` on the widget's root, in whichever theme it has now:
 * three `--hearken-…` properties. Undefined if `accent` is not a CSS colour.
 */
export const accentPainter = (accent: string): ((root: HTMLElement) => void) | undefined => {
  const rgb = rgbOf(accent)
  if (rgb === undefined) return undefined
  return (root) => {
    root.style.setProperty("--hearken-accent", css(rgb))
    root.style.setProperty("--hearken-on-accent", css(contrast(rgb, white) >= contrast(rgb, black) ? white : black))
    root.style.removeProperty("--hearken-accent-text")
    // A transparent background (the host's `--hearken-background`) cannot be measured: the accent is then text as it is.
    const background = rgbOf(getComputedStyle(root).backgroundColor)
    if (background) root.style.setProperty("--hearken-accent-text", css(readable(rgb, background)))
  }
}
