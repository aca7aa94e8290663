import { Migrator } from "effect/sql"
import initial from "./0001_initial.js"
import contacts from "./0002_contacts.js"
import webhooks from "./0003_webhooks.js"
import lexicon from "./0004_lexicon.js"
import embeddings from "./0005_embeddings.js"
import versions from "./0006_versions.js"
import slugCounters from "./0007_slug_counters.js"
import updateHtml from "./0008_update_html.js"
import idempotencyKeys from "./0009_idempotency_keys.js"
import ginPendingLists from "./0010_gin_pending_lists.js"
import webhookTraceContext from "./0011_webhook_trace_context.js"
import webhookClaimPerEndpoint from "./0012_webhook_claim_per_endpoint.js"
import embeddingCalibrations from "./0013_embedding_calibrations.js"
import calibrationPerOrganization from "./0014_calibration_per_organization.js"
import webhookReadyQueues from "./0015_webhook_ready_queues.js"
import webhookPreviousSecrets from "./0016_webhook_previous_secrets.js"
import lexiconStatistics from "./0017_lexicon_statistics.js"

/** Migrations in id order; a new one is a new numbered file added here. */
export const loader = Migrator.fromRecord({
  "0001_initial": initial,
  "0002_contacts": contacts,
  "0003_webhooks": webhooks,
  "0004_lexicon": lexicon,
  "0005_embeddings": embeddings,
  "0006_versions": versions,
  "0007_slug_counters": slugCounters,
  "0008_update_html": updateHtml,
  "0009_idempotency_keys": idempotencyKeys,
  "0010_gin_pending_lists": ginPendingLists,
  "0011_webhook_trace_context": webhookTraceContext,
  "0012_webhook_claim_per_endpoint": webhookClaimPerEndpoint,
  "0013_embedding_calibrations": embeddingCalibrations,
  "0014_calibration_per_organization": calibrationPerOrganization,
  "0015_webhook_ready_queues": webhookReadyQueues,
  "0016_webhook_previous_secrets": webhookPreviousSecrets,
  "0017_lexicon_statistics": lexiconStatistics
})
