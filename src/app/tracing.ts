import { context, propagation, trace } from '@opentelemetry/api';
import type { TracingConfig } from '../config/tracing.js';
import type { Logger } from '../logging/logger.js';
import { VERSION } from '../version.js';

/** A registered SDK: `shutdown` exports what is still queued, then unregisters it. */
export interface Tracing {
  shutdown(): Promise<void>;
}

/**
 * Registers the OpenTelemetry SDK for `serve`, when the OTEL_* settings ask for traces: a tracer provider
 * with the configured sampler and a batch span processor exporting over OTLP/HTTP (protobuf or JSON), the
 * AsyncLocalStorage context manager (so a handler's own instrumented calls land inside its span) and the
 * W3C trace-context propagator. The SDK is imported here, on demand: with tracing off not one of its
 * modules is loaded, and postroom's spans stay the API's no-ops.
 *
 * Every value comes from `config` (read from the environment with the other settings); the exporter
 * still reads the few standard variables postroom does not pass (compression, client certificates).
 */
export async function startTracing(config: TracingConfig, logger: Logger): Promise<Tracing | undefined> {
  if (!config.enabled) return undefined;
  const [sdk, { AsyncLocalStorageContextManager }, { W3CTraceContextPropagator }, { resourceFromAttributes }, exporterModule] =
    await Promise.all([
      import('@opentelemetry/sdk-trace'),
      import('@opentelemetry/context-async-hooks'),
      import('@opentelemetry/core'),
      import('@opentelemetry/resources'),
      config.protocol === 'http/json'
        ? import('@opentelemetry/exporter-trace-otlp-http')
        : import('@opentelemetry/exporter-trace-otlp-proto'),
    ]);
  const exporter = new exporterModule.OTLPTraceExporter({ url: config.url, headers: config.headers, timeoutMillis: config.timeoutMs });
  const ratio = new sdk.TraceIdRatioBasedSampler(config.samplerRatio);
  const root = {
    always_on: new sdk.AlwaysOnSampler(),
    always_off: new sdk.AlwaysOffSampler(),
    traceidratio: ratio,
    parentbased_always_on: new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() }),
    parentbased_always_off: new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() }),
    parentbased_traceidratio: new sdk.ParentBasedSampler({ root: ratio }),
  }[config.sampler];
  const provider = new sdk.TracerProvider({
    sampler: root,
    resource: resourceFromAttributes({ 'service.version': VERSION, ...config.resourceAttributes }),
    spanProcessors: [
      new sdk.BatchSpanProcessor({
        exporter,
        scheduledDelayMillis: config.batch.scheduleDelayMs,
        maxQueueSize: config.batch.maxQueueSize,
        maxExportBatchSize: config.batch.maxExportBatchSize,
        exportTimeoutMillis: config.batch.exportTimeoutMs,
      }),
    ],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  // The endpoint's address, never its headers (a vendor's API key goes there).
  logger.info(
    {
      otlp_url: config.url,
      protocol: config.protocol,
      sampler: config.sampler,
      sampler_ratio: config.samplerRatio,
      service: config.serviceName,
    },
    'exporting traces over OTLP',
  );
  return {
    async shutdown() {
      try {
        await provider.shutdown();
      } catch (err) {
        logger.warn({ err }, 'could not export the last spans');
      } finally {
        trace.disable();
        propagation.disable();
        context.disable();
      }
    },
  };
}
