import { Config, Context } from "effect"
import { flag, Integer, Milliseconds } from "./schemas.js"

// Webhook delivery (`webhooks/`): how often, how long, and whether this process delivers at all.

export const webhookMaxAttempts = Config.schema(Integer(1, 100, "an integer between 1 and 100"), "WEBHOOK_MAX_ATTEMPTS").pipe(
  Config.withDefault(8)
)

export const webhookRetryBaseMs = Config.schema(Milliseconds(86_400_000), "WEBHOOK_RETRY_BASE_MS").pipe(Config.withDefault(5000))

export const webhookTimeoutMs = Config.schema(Milliseconds(600_000), "WEBHOOK_TIMEOUT_MS").pipe(Config.withDefault(10_000))

export const webhookWorker = flag("WEBHOOK_WORKER", true)

export const webhookAllowPrivateUrls = flag("WEBHOOK_ALLOW_PRIVATE_URLS", false)

/** The webhook settings: `webhooks/Transport.ts`, `WebhookDelivery.ts`, `WebhookWorker.ts`. */
export interface WebhookConfigShape {
  readonly webhookMaxAttempts: number
  readonly webhookRetryBaseMs: number
  readonly webhookTimeoutMs: number
  /** Whether the server process delivers (`WEBHOOK_WORKER`); `npm run worker` always does. */
  readonly webhookWorker: boolean
  readonly webhookAllowPrivateUrls: boolean
}

export class WebhookConfig extends Context.Service<WebhookConfig, WebhookConfigShape>()("hearken/WebhookConfig") {}
