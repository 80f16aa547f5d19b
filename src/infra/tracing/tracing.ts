import type { AppConfig } from '../../config/app-config.js';
import { setTracingEnabled } from './spans.js';

export interface Tracing {
  /** Exports what is buffered and unregisters the provider. */
  shutdown(): Promise<void>;
  forceFlush(): Promise<void>;
}

/**
 * OpenTelemetry tracing when OTEL_EXPORTER_OTLP_ENDPOINT is set: spans of HTTP requests, BullMQ jobs and
 * provider calls, exported over OTLP/HTTP (JSON) to `<endpoint>/v1/traces`. Unset, nothing of the SDK is
 * even imported and the span helpers (spans.ts) do nothing. Call before the application is built.
 */
export async function startTracing(config: AppConfig, role: 'api' | 'worker'): Promise<Tracing | null> {
  if (!config.otlpEndpoint) return null;
  const [api, core, { BasicTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, resources, hooks] =
    await Promise.all([
      import('@opentelemetry/api'),
      import('@opentelemetry/core'),
      import('@opentelemetry/sdk-trace-base'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/context-async-hooks'),
    ]);
  const provider = new BasicTracerProvider({
    resource: resources.resourceFromAttributes({
      'service.name': `${config.project.projectSlug}-${role}`,
      'deployment.environment.name': config.env,
    }),
    spanProcessors: [
      new BatchSpanProcessor(new OTLPTraceExporter({ url: `${config.otlpEndpoint}/v1/traces` }), {
        scheduledDelayMillis: 1000,
      }),
    ],
  });
  api.context.setGlobalContextManager(new hooks.AsyncLocalStorageContextManager().enable());
  api.propagation.setGlobalPropagator(new core.W3CTraceContextPropagator());
  api.trace.setGlobalTracerProvider(provider);
  setTracingEnabled(true);
  return {
    forceFlush: () => provider.forceFlush(),
    async shutdown() {
      setTracingEnabled(false);
      await provider.shutdown();
      api.trace.disable();
      api.propagation.disable();
      api.context.disable();
    },
  };
}
