/** URLs may carry credentials (user info, tokens in the query): the operator sees neither. */
export const redactUrl = (raw: string) => {
  if (!URL.canParse(raw)) return "(invalid URL)"
  const url = new URL(raw)
  const userinfo = url.username !== "" || url.password !== ""
  url.username = ""
  url.password = ""
  const query = url.search !== ""
  url.search = ""
  url.hash = ""
  return url.toString().replace("://", userinfo ? "://…@" : "://") + (query ? "?…" : "")
}
