import { JsonSchema, Schema } from "effect"
import { Timestamp } from "./schemas.js"

/** The one event the service emits (docs/api.md: "Webhooks"). */
export const postCreatedEventType = "feedback.post.created"

/** `data` of `feedback.post.created`: the created post as stored (docs/webhooks.md). */
export const PostCreatedData = Schema.Struct({
  id: Schema.String,
  slug: Schema.String,
  title: Schema.String,
  boardId: Schema.String,
  organizationId: Schema.String,
  createdAt: Timestamp,
  statusId: Schema.String,
  contactId: Schema.NullOr(Schema.String).annotate({
    description: "the identified contact when the post came with a valid identity token, else null"
  }),
  metadata: Schema.Record(Schema.String, Schema.String)
}).annotate({ identifier: "PostCreatedData" })

/**
 * The body of a `feedback.post.created` delivery. The worker encodes every
 * body with this schema, and the OpenAPI `webhooks` map is derived from it.
 */
export const PostCreatedEvent = Schema.Struct({
  type: Schema.Literal(postCreatedEventType),
  timestamp: Timestamp.annotate({ description: "when the event happened: the post's createdAt" }),
  data: PostCreatedData
}).annotate({ identifier: "PostCreatedEvent" })
export type PostCreatedEvent = typeof PostCreatedEvent.Type

/** The Standard Webhooks headers on every delivery, as documented in OpenAPI. */
export const deliveryHeaders = {
  "webhook-id": "The message id, `msg_…`. The same on every retry of one message: use it to drop duplicates.",
  "webhook-timestamp": "Unix seconds when this attempt was signed. Refuse deliveries more than 5 minutes away from your clock.",
  "webhook-signature": "`v1,` followed by the base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`, keyed with the base64-decoded part of the endpoint's `whsec_` secret. Several space-separated signatures may appear."
} as const

/** `webhooks` and the schemas it references, for the OpenAPI 3.1 document. */
export const openApiWebhooks = () => {
  const document = Schema.toJsonSchemaDocument(PostCreatedEvent)
  const openApi = JsonSchema.toMultiDocumentOpenApi3_1({
    dialect: document.dialect,
    schemas: [document.schema],
    definitions: document.definitions
  })
  const answer = (description: string) => ({ description })
  return {
    schemas: openApi.definitions,
    webhooks: {
      [postCreatedEventType]: {
        post: {
          operationId: "feedbackPostCreated",
          summary: "A feedback post was created",
          description: [
            "Sent to every endpoint of the organization subscribed to `feedback.post.created`, after the post commits.",
            "Delivery follows Standard Webhooks (https://www.standardwebhooks.com): verify the signature with any of its libraries.",
            "Delivery is at least once: the same `webhook-id` may arrive more than once, so drop duplicates by it.",
            "Any 2xx is success. A network error, a timeout, 408, 429 or 5xx is retried with exponential backoff and full jitter (honouring `Retry-After`); other 4xx and 3xx answers fail the delivery at once, and redirects are never followed."
          ].join(" "),
          parameters: Object.entries(deliveryHeaders).map(([name, description]) => ({
            name,
            in: "header",
            required: true,
            description,
            schema: { type: "string" }
          })),
          requestBody: {
            required: true,
            content: { "application/json": { schema: { $ref: "#/components/schemas/PostCreatedEvent" } } }
          },
          responses: {
            "2XX": answer("Accepted. Answer quickly (within the timeout, 10 s by default) and do slow work afterwards."),
            "408": answer("Retried."),
            "429": answer("Retried, no sooner than `Retry-After` (capped at one hour)."),
            "5XX": answer("Retried."),
            "default": answer("Any other answer (other 4xx, or a 3xx: redirects are not followed) fails the delivery without retrying.")
          }
        }
      }
    }
  }
}
