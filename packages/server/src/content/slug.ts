const maxSlugLength = 80

/**
 * Lowercase ASCII `[a-z0-9-]+`. Accents are folded (`Crème` → `creme`); a
 * title with no ASCII letter or digit left gets `fallback`.
 */
export const slugify = (title: string, fallback = "post"): string => {
  const slug = title
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, maxSlugLength)
    .replace(/-+$/g, "")
  return slug === "" ? fallback : slug
}

/** The `n`-th slug of `base`: `base` itself, then `base-2`, `base-3`, … */
export const numberedSlug = (base: string, n: number): string => n <= 1 ? base : `${base}-${n}`
