import { NodeHttpServer } from "@effect/platform-node"
import { HearkenApi } from "@hearken/api/effect"
import { Effect, Layer } from "effect"
import { HttpRouter } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { createServer } from "node:http"
import { Boards } from "./boards/Boards.js"
import { PublicBoards } from "./boards/PublicBoards.js"
import { ConditionalAnswers } from "./caching/ConditionalAnswers.js"
import { Versions } from "./caching/Versions.js"
import { HttpConfig } from "./config/http.js"
import { Sanitizer } from "./content/Sanitizer.js"
import * as Embedder from "./embeddings/Embedder.js"
import { EmbeddingSignal } from "./embeddings/EmbeddingSignal.js"
import * as EmbeddingGauges from "./embeddings/EmbeddingGauges.js"
import { EmbeddingIndexes } from "./embeddings/EmbeddingIndexes.js"
import { EmbeddingQueue } from "./embeddings/EmbeddingQueue.js"
import { Embeddings } from "./embeddings/Embeddings.js"
import * as ApiDocs from "./docs/Docs.js"
import { Feedback } from "./feedback/Feedback.js"
import { Posts } from "./feedback/Posts.js"
import { ImportRepo } from "./import/ImportRepo.js"
import { Importer } from "./import/Importer.js"
import { IdempotencyKeys } from "./idempotency/IdempotencyKeys.js"
import { importConfiguredSeed } from "./import/startup.js"
import * as Health from "./health/Health.js"
import * as ConnectionCap from "./http/ConnectionCap.js"
import * as Drain from "./http/Drain.js"
import * as Edge from "./http/Edge.js"
import * as NodeErrors from "./http/NodeErrors.js"
import * as RequestErrors from "./http/RequestErrors.js"
import * as WidgetApi from "./http/WidgetApi.js"
import * as Logging from "./observability/Logging.js"
import * as Tracing from "./observability/Tracing.js"
import { Contacts } from "./identity/Contacts.js"
import { IdentityTokens } from "./identity/IdentityTokens.js"
import { OrganizationSecrets } from "./identity/OrganizationSecrets.js"
import { RateLimitGate } from "./rate-limit/RateLimitGate.js"
import * as RateLimitMiddleware from "./rate-limit/RateLimitMiddleware.js"
import * as Metrics from "./observability/Metrics.js"
import { Gauges } from "./observability/Gauges.js"
import * as MetricsServer from "./observability/MetricsServer.js"
import { RateLimiter } from "./rate-limit/RateLimiter.js"
import * as Database from "./sql/Database.js"
import * as DatabaseGauges from "./sql/DatabaseGauges.js"
import * as ReadReplica from "./sql/ReadReplica.js"
import * as Calibrator from "./suggestions/Calibrator.js"
import * as LexiconBackfill from "./feedback/LexiconBackfill.js"
import { CalibrationRepo } from "./suggestions/CalibrationRepo.js"
import { LexicalSearch } from "./suggestions/LexicalSearch.js"
import { Semantic } from "./suggestions/Semantic.js"
import { SuggestionQueries } from "./suggestions/SuggestionQueries.js"
import { Suggestions } from "./suggestions/Suggestions.js"
import { VectorSearch } from "./suggestions/VectorSearch.js"
import { PublicUpdates } from "./updates/PublicUpdates.js"
import { Updates } from "./updates/Updates.js"
import { DeliveryQueue } from "./webhooks/DeliveryQueue.js"
import { WebhookOutbox } from "./webhooks/Outbox.js"
import { OutboxRepo } from "./webhooks/OutboxRepo.js"
import * as WebhookGauges from "./webhooks/WebhookGauges.js"
import { WebhookOperatorRepo } from "./webhooks/WebhookOperatorRepo.js"
import * as WebhookWorker from "./webhooks/WebhookWorker.js"
import * as WidgetAssets from "./widget/WidgetAssets.js"

/**
 * The repositories, provided once: every service and background layer that
 * needs one is composed here from its `layerNoDeps`.
 */
/** The webhooks' repositories: the outbox, the delivery queue and the operator's commands. */
const WebhookRepositories = Layer.mergeAll(OutboxRepo.layer, DeliveryQueue.layer, WebhookOperatorRepo.layer)

const Repositories = Layer.mergeAll(
  WebhookRepositories,
  EmbeddingQueue.layer,
  EmbeddingIndexes.layer,
  VectorSearch.layer,
  LexicalSearch.layer,
  CalibrationRepo.layer
)

/** Suggestions, lexical and semantic, on the shared repositories. */
const SuggestionsLive = Suggestions.layerNoDeps.pipe(
  Layer.provide(Semantic.layerNoDeps),
  Layer.provide(SuggestionQueries.layer)
)

/** Every service, built once at start-up. Needs the `Repositories`. */
const Services = Layer.mergeAll(Feedback.layerNoDeps, SuggestionsLive, PublicBoards.layerNoDeps, PublicUpdates.layerNoDeps, Importer.layerNoDeps).pipe(
  Layer.provideMerge(ConditionalAnswers.layerNoDeps),
  Layer.provideMerge(Layer.mergeAll(Updates.layerNoDeps, Versions.layer)),
  Layer.provideMerge(Layer.mergeAll(
    Boards.layer, Posts.layer, IdentityTokens.layerNoDeps, Contacts.layer, WebhookOutbox.layerNoDeps, IdempotencyKeys.layer
  )),
  Layer.provideMerge(Layer.mergeAll(OrganizationSecrets.layer, ImportRepo.layer)),
  Layer.provideMerge(Layer.mergeAll(Sanitizer.layer, Embeddings.layer, EmbeddingSignal.layer))
)

/**
 * The database gauges, each feature's own, in the order they are read (`observability/Gauges.ts`):
 * the replica's first, read on the replica, so they are there when the primary is not.
 */
const DatabaseGaugesLive = Gauges.from([DatabaseGauges.replica, WebhookGauges.reader, EmbeddingGauges.reader, DatabaseGauges.pool])

/** `GET /metrics` on `METRICS_PORT`, with the database gauges (nothing without `METRICS_PORT`). */
const MetricsListener = MetricsServer.layer(DatabaseGaugesLive)

/** One rate limiter for the API and for `/docs`. */
const RateLimiting = RateLimitGate.layerNoDeps.pipe(Layer.provide(RateLimiter.layer))

const Api = HttpApiBuilder.layer(HearkenApi).pipe(
  Layer.provide([WidgetApi.layer, Health.layer]),
  Layer.provideMerge(RequestErrors.layer),
  Layer.provideMerge(RateLimitMiddleware.layer),
  Layer.provide(RateLimiting)
)

/** `/docs`, its script `/docs/scalar.js` and `/docs/openapi.json`, rate-limited, as shared bytes (decisions 0016, 0035). */
const Docs = ApiDocs.layer.pipe(Layer.provide(RateLimiting))

// Metrics first: the first global middleware is the outermost, so it counts every answer as sent.
// `Edge.requestFraming` before CORS, which answers every OPTIONS itself: an ambiguous request gets no
// preflight either. `Drain.refuse` right after CORS: a stopping server refuses before anything else runs.
const Routes = Layer.mergeAll(Metrics.layer, Api, Docs, WidgetAssets.layer, Edge.requestFraming, Edge.cors, Drain.refuse, Edge.fallback, Edge.requestLog, Tracing.responseHeader)

/**
 * The listening socket. Node's own refusals (parse errors, oversized headers,
 * timeouts, `Expect`) answer with JSON bodies, and a request that finds no
 * handler attached gets a JSON 503 (`http/NodeErrors.ts`). Stopping drains it
 * first (`http/Drain.ts`).
 */
const HttpServerLive = Layer.unwrap(Effect.gen(function*() {
  const config = yield* HttpConfig
  // A public API should not hold sockets for slow clients: headers and the whole request within the
  // `HttpConfig` limits, and no connection on which nothing moves for `HTTP_STALL_TIMEOUT_MS`: a client that
  // stops reading a large answer (`/docs`, a long changelog) would otherwise hold its socket for good (decision 0022).
  // And no client address holds more than `MAX_CONNECTIONS_PER_ADDRESS` sockets (decision 0029).
  return Drain.layerServer(() =>
    ConnectionCap.install(NodeErrors.install(createServer({
      keepAliveTimeout: config.keepAliveTimeoutMs,
      headersTimeout: config.headersTimeoutMs,
      requestTimeout: config.requestTimeoutMs,
      connectionsCheckingInterval: config.connectionsCheckingIntervalMs,
      // Node would refuse a missing Host with an empty body; `Edge.requestFraming` refuses it in JSON.
      requireHostHeader: false,
      // The API has no upgrades: a request with `Upgrade` is an ordinary one, answered and kept alive as such.
      shouldUpgradeCallback: () => false
    })).setTimeout(config.httpStallTimeoutMs), config.maxConnectionsPerAddress), {
    port: config.port,
    host: config.host,
    gracefulShutdownTimeout: config.gracefulShutdownTimeout
  })
}))

/**
 * The routes, the router and the platform services they need, built before
 * `HttpServerLive` so the port opens only once every route is in place (the
 * rate limiter's Redis connection used to leave a connection accepted with no
 * handler, never answered). `HttpRouter.serve` then finds both layers already
 * built (layers are memoized). The few milliseconds left between listening
 * and attaching the handler are covered by `NodeErrors`' JSON 503. The
 * metrics listener (with `METRICS_PORT`) opens alongside, before `PORT`.
 */
const RoutesReady = Layer.merge(Layer.provideMerge(Routes, HttpRouter.layer), MetricsListener).pipe(
  Layer.provideMerge(NodeHttpServer.layerHttpServices)
)

/** HTTP on `PORT`, opened last. */
const Http = HttpRouter.serve(Routes, { disableLogger: true }).pipe(
  Layer.provideMerge(HttpServerLive),
  Layer.provideMerge(RoutesReady),
  Layer.provide(Drain.Drain.layer)
)

/**
 * The log level and format, and the trace exporter when `OTEL_EXPORTER_OTLP_ENDPOINT` is set
 * (built with the logger, so that its sending fiber logs in the configured format).
 */
const Observability = Tracing.layer.pipe(Layer.provideMerge(Logging.settings))

/**
 * The migrated database, the reads' client (the replica's with `DATABASE_READ_URL`), the
 * repositories and the log level, without the API: for workers and operator commands, and under `Core`.
 */
export const Tooling = Repositories.pipe(
  Layer.provideMerge(ReadReplica.layer),
  Layer.provideMerge(Database.layer),
  Layer.provideMerge(Observability)
)

/** Schema, services and the configured seed: what the server and `npm run seed` share. */
export const Core = Layer.effectDiscard(importConfiguredSeed).pipe(
  Layer.provideMerge(Services),
  Layer.provideMerge(Tooling)
)

/**
 * The whole server: the database migrated and seeded first, then HTTP on
 * `PORT`, the suggestion index back-fill, the embedding worker and the
 * suggestions' calibrator when `EMBEDDINGS_URL` is set and, unless `WEBHOOK_WORKER=false`, the webhook
 * worker. Needs every configuration slice (`config/ServerConfig.ts`).
 */
export const App = Layer.mergeAll(
  Http,
  WebhookWorker.layer,
  LexiconBackfill.layer,
  Embedder.layer,
  Calibrator.layer
).pipe(Layer.provide(Core))

/** `npm run worker`: webhook delivery alone, for dedicated worker processes. */
export const Worker = Layer.merge(WebhookWorker.layerAlways, MetricsListener).pipe(Layer.provide(Tooling))
