import { SchemaIssue } from "effect"

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

/** `organizations[0].posts[3].boardId` */
export const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>(
    (out, key) => typeof key === "number" ? `${out}[${key}]` : out === "" ? String(key) : `${out}.${String(key)}`,
    ""
  )

/** `path: what was expected`, for the first issue. The submitted value is never echoed back. */
export const describeIssue = (issue: SchemaIssue.Issue, fallbackField: string): string => {
  const [first] = formatter(issue).issues
  if (first === undefined) return `${fallbackField}: invalid`
  const message = first.message === "Missing key" ? "is required" : first.message.replace(/, got [\s\S]*$/u, "")
  const field = formatPath((first.path ?? []).map((p) => typeof p === "object" ? p.key : p))
  return `${field === "" ? fallbackField : field}: ${message}`
}
