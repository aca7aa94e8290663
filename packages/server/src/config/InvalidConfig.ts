import { type Config, ConfigProvider, Effect, Schema, SchemaIssue } from "effect"
import { printableUrl } from "./redaction.js"

/** Start-up refuses a bad environment variable with this error, naming it. */
export class InvalidConfig extends Schema.TaggedError<InvalidConfig>()("InvalidConfig", {
  variable: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `Invalid configuration: ${this.variable} ${this.reason}`
  }
}

/**
 * The variables whose value is a URL. A URL may carry credentials, so none of these is ever
 * printed whole: a refused one is shown through `printableUrl`, and their user info is removed
 * from any start-up line (`startup-failure.ts`).
 */
export const urlVariables = [
  "DATABASE_URL",
  "DATABASE_DIRECT_URL",
  "DATABASE_READ_URL",
  "REDIS_URL",
  "EMBEDDINGS_URL",
  "PUBLIC_URL",
  "DASHBOARD_ORIGIN",
  "OTEL_EXPORTER_OTLP_ENDPOINT"
] as const

/** Hearken's rule: an empty or blank value means unset (Effect's `fromEnv` drops only an empty one). */
export const blankIsUnset = (provider: ConfigProvider.ConfigProvider) =>
  ConfigProvider.make((path) =>
    Effect.map(provider.load(path), (node) =>
      node?.value === undefined || node.value.trim() !== ""
        ? node
        : node._tag === "Value"
        ? undefined
        : { ...node, value: undefined })
  )

/** A variable that decodes to a `Redacted` (`Config.Redacted`, `Schema.RedactedFromValue`) is a secret: its value is never printed. */
const isSecret = (issue: SchemaIssue.Issue): boolean => {
  const representation = "ast" in issue ? issue.ast.annotations?.representation as { readonly id?: unknown } | undefined : undefined
  return representation?.id === "effect/schema/Redacted" || ("issue" in issue && isSecret(issue.issue))
}

/**
 * The one place a `ConfigError` becomes the start-up line, e.g. `Invalid configuration: PORT must be
 * a port number between 0 and 65535, got "abc"`: the variable is where the error points, the words
 * the failed check's `message`, and the value as given follows unless it is a secret.
 */
export const invalidConfig = Effect.fnUntraced(function*(
  error: Config.ConfigError,
  provider: ConfigProvider.ConfigProvider
): Effect.fn.Return<never, InvalidConfig | Config.ConfigError> {
  if (!Schema.isSchemaError(error.cause)) return yield* Effect.fail(error)
  const issue = error.cause.issue
  // `Config.schema` points a failure at the variable's path: one name here.
  const variable = issue._tag === "Pointer" ? issue.path.join("_") : "(unknown)"
  const expected = SchemaIssue.makeFormatterStandardSchemaV1()(issue).issues[0]?.message
  const given = yield* provider.load([variable]).pipe(Effect.map((node) => node?.value), Effect.orElseSucceed(() => undefined))
  const shown = given === undefined || isSecret(issue)
    ? undefined
    : !(urlVariables as ReadonlyArray<string>).includes(variable)
    ? given
    : printableUrl(given)
  return yield* new InvalidConfig({
    variable,
    reason: shown === undefined ? `must be ${expected}` : `must be ${expected}, got ${JSON.stringify(shown)}`
  })
})
