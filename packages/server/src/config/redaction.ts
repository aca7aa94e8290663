/**
 * What of a secret-bearing value may be printed: the one place Hearken redacts URLs and secrets
 * in what it prints (start-up lines, configuration errors, operator commands).
 */

/**
 * A URL as it may be printed, without its user info, query and fragment, which may carry
 * credentials or tokens: `https://…@hooks.example.com/in?…`. A value that is not a URL has no
 * structure to trust (a password may hold `/`, `#` or `?`, or a key be pasted in its place), so
 * none of it is printed: `(invalid URL)`.
 */
export const redactUrl = (raw: string) => printableUrl(raw) ?? "(invalid URL)"

/**
 * `redactUrl`, or nothing for a value with no structure to trust: one that does not parse, or
 * parses with no host (`user:password@host` reads as the scheme `user:`).
 */
export const printableUrl = (raw: string): string | undefined => {
  if (!URL.canParse(raw)) return undefined
  const url = new URL(raw)
  if (url.host === "") return undefined
  const userinfo = url.username !== "" || url.password !== ""
  url.username = ""
  url.password = ""
  const query = url.search !== ""
  url.search = ""
  url.hash = ""
  return url.toString().replace("://", userinfo ? "://…@" : "://") + (query ? "?…" : "")
}

/**
 * The user info of a URL-valued setting, as the person wrote it, whether or not it parses: all
 * before the last `@` (after `scheme://`), since a password may hold `/`, `#`, `?` or `@`.
 */
export const userInfoOf = (value: string): string | undefined => {
  const scheme = value.indexOf("://")
  const start = scheme < 0 ? 0 : scheme + 3
  const at = value.lastIndexOf("@")
  return at >= start ? value.slice(start, at) : undefined
}

export const percentDecoded = (text: string) => {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/**
 * The strings to remove from printed text for one URL-valued setting, as written and decoded:
 * its password and whole user info; a user info of a name alone only when it is as long as a
 * token (16 characters or more), since `postgres` or `admin` is no secret, and removing it
 * everywhere would garble the line.
 */
export const urlSecrets = (value: string): Array<string> => {
  const userinfo = userInfoOf(value)
  if (userinfo === undefined) return []
  const colon = userinfo.indexOf(":")
  const parts = colon >= 0 ? [userinfo, userinfo.slice(colon + 1)] : userinfo.length >= 16 ? [userinfo] : []
  return parts.filter((part) => part !== "").flatMap((part) => [part, percentDecoded(part)])
}

/**
 * Free text (an error's message, a cause's trace) as it may be printed: every `scheme://user:…@`
 * loses its password, up to the last `@` before a space (a password may hold `/`), and each of
 * `secrets` (longest first, so one holding another goes whole) becomes `***`. What the text
 * cannot tell from a path (`file:///…/node_modules/@scope`, `http://host:8080/@x`) is left as
 * it is: the secrets of the configured URLs go by `secrets`.
 */
export const redactText = (text: string, secrets: Iterable<string>) => {
  let out = text.replace(
    // A scheme of at most 32 characters: an unbounded one costs quadratic time on a long word.
    /([a-z][a-z0-9+.-]{0,31}:\/\/)([^\s:/?#@]*):(\S*)@/gi,
    (match: string, scheme: string, user: string, password: string) =>
      /^\d{1,5}(\/|$)/.test(password) ? match : `${scheme}${user}:***@`
  )
  for (const secret of [...new Set(secrets)].sort((a, b) => b.length - a.length)) {
    if (secret !== "") out = out.split(secret).join("***")
  }
  return out
}
