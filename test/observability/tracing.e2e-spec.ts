import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import { JOBS } from '../../src/infra/queue/queues.js';
import { tracingEnabled } from '../../src/infra/tracing/spans.js';
import { startTracing, type Tracing } from '../../src/infra/tracing/tracing.js';
import { FakeEmailApi } from '../fakes/email-api.js';
import { deliverIdentity, identityUserEvent, signIdentityEvent } from '../support/identity-webhook.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: Record<string, unknown> }[];
}
const SERVER = 2;
const CLIENT = 3;
const CONSUMER = 5;

/**
 * A stand-in for an OpenTelemetry collector: the OTLP/HTTP receiver (POST /v1/traces, JSON encoding) on an
 * ephemeral port, keeping every span it is sent with the service that sent it.
 */
class CollectorStandIn {
  readonly spans: (OtlpSpan & { service: string })[] = [];
  readonly contentTypes: string[] = [];
  url = '';
  private server!: Server;

  static async start(): Promise<CollectorStandIn> {
    const collector = new CollectorStandIn();
    collector.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.method !== 'POST' || req.url !== '/v1/traces') return void res.writeHead(404).end();
        collector.contentTypes.push(String(req.headers['content-type']));
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans: {
            resource: { attributes: OtlpSpan['attributes'] };
            scopeSpans: { spans: OtlpSpan[] }[];
          }[];
        };
        for (const rs of body.resourceSpans) {
          const service = String(
            rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue,
          );
          for (const ss of rs.scopeSpans)
            for (const span of ss.spans) collector.spans.push({ ...span, service });
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => collector.server.listen(0, '127.0.0.1', resolve));
    collector.url = `http://127.0.0.1:${(collector.server.address() as AddressInfo).port}`;
    return collector;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value ? (value.stringValue ?? value.intValue) : undefined;
};

describe('OpenTelemetry tracing', () => {
  describe('without OTEL_EXPORTER_OTLP_ENDPOINT', () => {
    let env: TestEnv;
    afterAll(() => env?.close());

    it('starts nothing and leaves jobs as they were', async () => {
      env = await TestEnv.create();
      expect(env.config.otlpEndpoint).toBeNull();
      expect(await startTracing(env.config, 'api')).toBeNull();
      expect(tracingEnabled()).toBe(false);
      const api = await env.startApi();
      const queues = api.app.get(QueueService);
      const id = await queues.add(
        JOBS.sendEmail,
        { userId: 'none', templateKey: 'welcome', idempotencyKey: 'untraced' },
        { jobId: 'untraced', delay: 3_600_000 },
      );
      const job = await queues.queue('email').getJob(id!);
      expect(job?.opts.telemetry).toBeUndefined();
    });
  });

  describe('with OTEL_EXPORTER_OTLP_ENDPOINT set', () => {
    let collector: CollectorStandIn;
    let email: FakeEmailApi;
    let env: TestEnv;
    let api: ApiApp;
    let tracing: Tracing | null;

    beforeAll(async () => {
      [collector, email] = await Promise.all([CollectorStandIn.start(), FakeEmailApi.start()]);
      env = await TestEnv.create({
        env: { ...email.env(), OTEL_EXPORTER_OTLP_ENDPOINT: `${collector.url}/` },
      });
      // The API and the worker share this test process, so one tracer provider serves both; in
      // production each process starts its own (main.ts, worker.ts) and the trace crosses them in Redis.
      tracing = await startTracing(env.config, 'api');
      api = await env.startApi();
      const worker: INestApplication = await env.startWorker();
      expect(worker).toBeDefined();
    });
    afterAll(async () => {
      await env?.close();
      await tracing?.shutdown();
      await Promise.all([collector?.close(), email?.close()]);
    });

    it('follows one trace from the HTTP request through the BullMQ jobs to the provider call', async () => {
      const traceId = randomBytes(16).toString('hex');
      const callerSpan = randomBytes(8).toString('hex');
      const delivery = signIdentityEvent(
        identityUserEvent('user.created', 'user_traced', 'traced@example.com'),
      );
      const res = await deliverIdentity(api, delivery, { traceparent: `00-${traceId}-${callerSpan}-01` });
      expect(res.status).toBe(200);

      // The welcome e-mail is sent by the post-signup job, which the intake statement's webhook job's commit
      // enqueued.
      await waitFor(async () => email.requests.length > 0, 15_000);
      // A parent span ends (and is exported) after its children: wait until the chain is complete.
      const inTrace = await waitFor(async () => {
        await tracing!.forceFlush();
        const spans = collector.spans.filter((s) => s.traceId === traceId);
        const ids = new Map(spans.map((s) => [s.spanId, s]));
        let span = spans.find((s) => s.kind === CLIENT);
        while (span && span.kind !== SERVER) span = ids.get(span.parentSpanId ?? '');
        return span ? spans : null;
      }, 15_000);
      expect(collector.contentTypes[0]).toContain('application/json');

      const byId = new Map(inTrace.map((s) => [s.spanId, s]));
      const server = inTrace.find((s) => s.kind === SERVER);
      expect(server).toMatchObject({ name: 'POST /webhooks/identity', parentSpanId: callerSpan });
      expect(attribute(server!, 'http.response.status_code')).toEqual(expect.anything());

      const webhookJob = inTrace.find((s) => s.name === 'job webhooks/apply-webhooks');
      expect(webhookJob).toMatchObject({ kind: CONSUMER, parentSpanId: server!.spanId });
      const signupJob = inTrace.find((s) => s.name === 'job users/post-signup');
      expect(signupJob).toMatchObject({ kind: CONSUMER });

      const providerCall = inTrace.find((s) => s.kind === CLIENT)!;
      expect(providerCall.name).toBe('POST email');
      expect(attribute(providerCall, 'url.full')).toBe(`${email.url}/emails`);
      expect(String(attribute(providerCall, 'http.response.status_code'))).toBe('200');

      // The provider call's ancestry leads back through both jobs to the request.
      const ancestry: string[] = [];
      for (let span: OtlpSpan | undefined = providerCall; span; span = byId.get(span.parentSpanId ?? ''))
        ancestry.push(span.name);
      expect(ancestry).toEqual([
        'POST email',
        'job users/post-signup',
        'job webhooks/apply-webhooks',
        'POST /webhooks/identity',
      ]);
    });

    it('does not trace the liveness probe and never records query strings', async () => {
      await api.http.get('/health');
      await api.http.get('/api/v1/email/unsubscribe?t=secret-token-value');
      await tracing!.forceFlush();
      expect(collector.spans.some((s) => attribute(s, 'url.path') === '/health')).toBe(false);
      expect(JSON.stringify(collector.spans)).not.toContain('secret-token-value');
      expect(collector.spans.some((s) => attribute(s, 'url.path') === '/api/v1/email/unsubscribe')).toBe(
        true,
      );
    });
  });
});
