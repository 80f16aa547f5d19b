import {
  context,
  type Context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import type { JobsOptions } from 'bullmq';
import type { NextFunction, Request, Response } from 'express';

/**
 * Trace helpers over the OpenTelemetry API only (the SDK is loaded by startTracing, and only when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set). Until tracing starts, every helper returns at its first line:
 * no span objects, no context lookups, no job option changes.
 */
let enabled = false;

export function setTracingEnabled(on: boolean): void {
  enabled = on;
}

export const tracingEnabled = (): boolean => enabled;

const tracer = () => trace.getTracer('subscription-service');

function endWith(span: Span, err: unknown): never {
  span.recordException(err as Error);
  span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.message });
  span.end();
  throw err;
}

/** Runs `fn` in a new span (child of the active one, or of `parent`), ended when it settles. */
export async function inSpan<T>(
  name: string,
  options: { kind: SpanKind; attributes?: Record<string, string | number>; parent?: Context },
  fn: (span: Span | null) => Promise<T>,
): Promise<T> {
  if (!enabled) return fn(null);
  const parent = options.parent ?? context.active();
  const span = tracer().startSpan(name, { kind: options.kind, attributes: options.attributes }, parent);
  let result: T;
  try {
    result = await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (err) {
    endWith(span, err);
  }
  span.end();
  return result;
}

/**
 * One SERVER span per API request, continuing a caller's W3C `traceparent`. Named by route template
 * (never the raw path: ids would make every request its own operation); no query strings, no headers.
 */
export function httpTracingMiddleware() {
  return (req: Request, res: Response, next: NextFunction): void => {
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    const span = tracer().startSpan(
      req.method,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method, 'url.path': req.path } },
      parent,
    );
    res.on('finish', () => {
      const template = req.route?.path ? `${req.baseUrl}${String(req.route.path)}` : '';
      const route = template && !template.includes('*') ? template : null;
      if (route) {
        span.updateName(`${req.method} ${route}`);
        span.setAttribute('http.route', route);
      }
      span.setAttribute('http.response.status_code', res.statusCode);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    context.with(trace.setSpan(parent, span), next);
  };
}

/**
 * Job options carrying the active trace into the job (BullMQ keeps `telemetry.metadata` with the job in
 * Redis: the W3C trace context as JSON, the format of BullMQ's own OpenTelemetry integration).
 */
export function withTraceContext(options: JobsOptions): JobsOptions {
  if (!enabled || options.telemetry?.metadata) return options;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  if (!carrier.traceparent) return options;
  return { ...options, telemetry: { ...options.telemetry, metadata: JSON.stringify(carrier) } };
}

/** The trace a job was enqueued in (ROOT when none travelled with it). */
export function jobTraceContext(options: JobsOptions): Context {
  const metadata = options.telemetry?.metadata;
  if (!metadata) return ROOT_CONTEXT;
  try {
    return propagation.extract(ROOT_CONTEXT, JSON.parse(metadata) as Record<string, string>);
  } catch {
    return ROOT_CONTEXT;
  }
}

export { SpanKind };
