import { ConfigProvider, Effect, Option, Redacted, Result } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { loadServerConfig } from "../packages/server/src/config/ServerConfig.js"
import { Collector } from "./support/collector.js"
import { baseFixture } from "./support/fixtures.js"
import { endpoint, Receiver } from "./support/receiver.js"
import { getJson, postJson, startSeededServer, useServer } from "./support/server.js"

/**
 * Traces (decision 0013): one POST /feedback, as a fake OTLP/HTTP collector
 * receives it, continuing the caller's `traceparent`; its webhook delivery in
 * a trace of its own, linked to the request's.
 */
const collector = await Collector.start()
const receiver = await Receiver.start()
afterAll(async () => {
  await collector.close()
  await receiver.close()
})

const fixture = baseFixture()
;(fixture.organizations[0] as Record<string, unknown>)["webhooks"] = [endpoint("wh_traced", receiver.url("/traced"))]

const server = useServer(() =>
  startSeededServer(fixture, {
    WEBHOOK_ALLOW_PRIVATE_URLS: "true",
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_BSP_SCHEDULE_DELAY: "100",
    OTEL_SERVICE_NAME: "hearken-test",
    OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=test,service.namespace=feedback"
  })
)

const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
const callerSpanId = "00f067aa0ba902b7"
const title = "Traced title 7f3a"

describe("traces over OTLP/HTTP", () => {
  it("exports one POST /feedback as one trace continuing the caller's traceparent, and links its webhook delivery", async () => {
    const res = await postJson(
      `${server.api}/feedback`,
      { organizationId: "org_acme", boardId: "b_feat", title, content: "<p>secret-ish <b>body</b> 9c1d</p>" },
      { traceparent: `00-${traceId}-${callerSpanId}-01` }
    )
    expect(res.status).toBe(200)
    expect(res.headers.get("x-trace-id")).toBe(traceId)

    await receiver.waitFor("/traced", 1)
    const delivery = await collector.waitFor("the webhook delivery span", (span) => span.name === "WebhookDelivery.attempt")
    const http = await collector.waitFor("the HTTP server span", (span) => span.traceId === traceId && span.kind === 2)

    // The HTTP span: a child of the caller's span, with route, status and organization.
    expect(http.parentSpanId).toBe(callerSpanId)
    expect(http.name).toBe("POST")
    expect(http.attributes).toMatchObject({
      "http.request.method": "POST",
      "http.route": "/api/widget/v1/feedback",
      "http.response.status_code": 200,
      "hearken.organization_id": "org_acme"
    })
    expect(http.resource).toMatchObject({
      "service.name": "hearken-test",
      "deployment.environment": "test",
      "service.namespace": "feedback"
    })

    const trace = collector.trace(traceId)
    const byId = new Map(trace.map((span) => [span.spanId, span]))
    // Every span of the request descends from the HTTP span.
    const descends = (span: (typeof trace)[number]) => {
      for (let current = span, depth = 0; depth < 50; depth++) {
        if (current.spanId === http.spanId) return true
        const parent = current.parentSpanId === undefined ? undefined : byId.get(current.parentSpanId)
        if (parent === undefined) return false
        current = parent
      }
      return false
    }
    for (const span of trace) {
      if (span !== http) expect(descends(span), `${span.name} under the HTTP span`).toBe(true)
    }
    const names = trace.map((span) => span.name)
    for (const name of ["RateLimiter.consume", "Feedback.createPost", "Sanitizer.post", "Sanitizer.text", "Posts.insert", "WebhookOutbox.postCreated"]) {
      expect(names, name).toContain(name)
    }

    // One client span per SQL statement, with its text and no parameter values.
    const statements = trace.filter((span) => span.attributes["db.query.text"] !== undefined)
    expect(statements.length).toBeGreaterThanOrEqual(4)
    expect(statements.every((span) => span.kind === 3 && span.attributes["db.system.name"] === "postgresql")).toBe(true)
    // The database and server DATABASE_URL names, not PgClient's defaults (`postgres`, `localhost`).
    const where = new URL(server.db.url)
    expect(new Set(statements.map((span) => `${span.attributes["server.address"]}:${span.attributes["server.port"]}/${span.attributes["db.namespace"]}`)))
      .toEqual(new Set([`${where.hostname}:${where.port}/${where.pathname.slice(1)}`]))
    expect(where.hostname).not.toBe("localhost")
    const texts = statements.map((span) => String(span.attributes["db.query.text"]))
    expect(texts.some((text) => text.startsWith("INSERT INTO posts"))).toBe(true)
    expect(texts.some((text) => text.includes("INSERT INTO webhook_events"))).toBe(true)
    expect(JSON.stringify(trace)).not.toContain(title)
    expect(JSON.stringify(trace)).not.toContain("9c1d")

    // The delivery: its own trace, linked to the span of the request that enqueued it.
    expect(delivery.traceId).not.toBe(traceId)
    expect(delivery.parentSpanId).toBeUndefined()
    expect(delivery.links).toHaveLength(1)
    expect(delivery.links[0]!.traceId).toBe(traceId)
    expect(byId.get(delivery.links[0]!.spanId)?.name).toBe("WebhookOutbox.postCreated")
    expect(delivery.attributes).toMatchObject({ "hearken.webhook.endpoint_id": "wh_traced", "hearken.webhook.attempt": 1 })
    expect(collector.refused).toEqual([])
  })

  it("starts a new trace without a traceparent, and names it in x-trace-id", async () => {
    const res = await getJson(`${server.api}/boards?organizationId=org_acme`)
    expect(res.status).toBe(200)
    const id = res.headers.get("x-trace-id")
    expect(id).toMatch(/^[0-9a-f]{32}$/)
    const http = await collector.waitFor("the /boards span", (span) => span.traceId === id && span.kind === 2)
    expect(http.parentSpanId).toBeUndefined()
    expect(http.attributes).toMatchObject({ "http.route": "/api/widget/v1/boards", "hearken.organization_id": "org_acme" })
  })

  it("exposes x-trace-id to browsers", async () => {
    const res = await fetch(`${server.api}/boards?organizationId=org_acme`, { headers: { origin: server.origin } })
    expect(res.headers.get("access-control-expose-headers")?.split(/,\s*/)).toContain("x-trace-id")
  })
})

describe("trace configuration", () => {
  const load = (env: Record<string, string>) =>
    Effect.runPromise(Effect.result(loadServerConfig.pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env }))))))

  it("exports nothing unless OTEL_EXPORTER_OTLP_ENDPOINT is set", async () => {
    const config = await load({})
    expect(Result.isSuccess(config) && Option.isNone(config.success.tracing)).toBe(true)
    expect(Result.isSuccess(config) && config.success.logFormat).toBe("text")
  })

  it("reads the standard variables, with OpenTelemetry's defaults", async () => {
    const config = await load({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/otlp/",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=prod,team=feed%20back",
      OTEL_EXPORTER_OTLP_HEADERS: "x-api-key=abc%3D"
    })
    if (!Result.isSuccess(config) || Option.isNone(config.success.tracing)) throw new Error("expected tracing")
    const tracing = config.success.tracing.value
    expect(tracing.url.href).toBe("http://collector:4318/otlp/v1/traces")
    expect(tracing.protocol).toBe("http/protobuf")
    expect(tracing.serviceName).toBe("hearken")
    expect(tracing.resourceAttributes).toEqual({ "deployment.environment": "prod", team: "feed back" })
    expect(Redacted.value(tracing.headers)).toEqual({ "x-api-key": "abc=" })
    expect(tracing.exportIntervalMs).toBe(5000)
    expect(tracing.exportTimeoutMs).toBe(10_000)
    expect(tracing.maxQueueSize).toBe(2048)
    expect(tracing.maxExportBatchSize).toBe(512)
  })

  it("refuses a bad value naming the variable, and never prints the headers", async () => {
    const protocol = await load({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })
    expect(Result.isFailure(protocol) && protocol.failure.message).toBe(
      "Invalid configuration: OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json, got \"grpc\""
    )
    const headers = await load({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_HEADERS: "secret-token-no-equals" })
    expect(Result.isFailure(headers) && headers.failure.message).toBe(
      "Invalid configuration: OTEL_EXPORTER_OTLP_HEADERS must be key=value pairs separated by commas"
    )
    const timeout = await load({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_TIMEOUT: "10s" })
    expect(Result.isFailure(timeout) && timeout.failure.message).toBe(
      "Invalid configuration: OTEL_EXPORTER_OTLP_TIMEOUT must be a number of milliseconds between 1 and 600000, got \"10s\""
    )
    const batch = await load({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_BSP_MAX_QUEUE_SIZE: "100", OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "512" })
    expect(Result.isFailure(batch) && batch.failure.message).toBe(
      "Invalid configuration: OTEL_BSP_MAX_EXPORT_BATCH_SIZE must be an integer between 1 and OTEL_BSP_MAX_QUEUE_SIZE (100), got \"512\""
    )
    const format = await load({ LOG_FORMAT: "yaml" })
    expect(Result.isFailure(format) && format.failure.message).toBe("Invalid configuration: LOG_FORMAT must be text or json, got \"yaml\"")
  })
})
