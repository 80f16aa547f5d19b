import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { Redis } from 'ioredis';
import request from 'supertest';
import { CreditsService } from '../../src/modules/credits/credits.service.js';
import { EmailService } from '../../src/modules/email/email.service.js';
import { deliverIdentity, identityUserEvent, signIdentityEvent } from '../support/identity-webhook.js';
import { freePort } from '../support/processes.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

describe('Prometheus metrics', () => {
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;
  let metricsPort: number;

  beforeAll(async () => {
    env = await TestEnv.create();
    metricsPort = await freePort();
    api = await env.startApi({ config: env.configWith({ METRICS_PORT: String(metricsPort) }) });
    worker = await env.startWorker();
  });
  afterAll(() => env.close());

  it('serves API metrics on their own port, with request rate and latency by route template', async () => {
    await api.http.get('/health');
    await api.http.get('/api/v1/nothing/123');
    const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toMatch(
      /http_requests_total\{method="GET",route="\/health",status="200",service="subscription-service"\} 1/,
    );
    expect(text).toMatch(/http_requests_total\{method="GET",route="unmatched",status="404"/);
    expect(text).toContain('http_request_duration_seconds_bucket');
    expect(text).toContain('process_resident_memory_bytes');
    expect(text).not.toContain('/api/v1/nothing/123');
  });

  it('does not serve metrics on the public port', async () => {
    expect((await api.http.get('/metrics')).status).toBe(404);
    expect((await api.http.get('/api/v1/metrics')).status).toBe(404);
  });

  it('serves worker metrics with queue depths on the worker port', async () => {
    const res = await request(worker.getHttpServer()).get('/metrics');
    expect(res.status).toBe(200);
    expect(res.text).toMatch(
      /queue_jobs\{queue="email",state="waiting",service="subscription-service"\} \d+/,
    );
  });

  it("exports Redis's memory and maxmemory as INFO reports them (completed jobs are kept 24 h)", async () => {
    const redis = new Redis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');
    try {
      const info = async (field: string) =>
        Number(new RegExp(`^${field}:(\\d+)`, 'm').exec(await redis.info('memory'))?.[1]);
      const before = await info('used_memory');
      const text = (await request(worker.getHttpServer()).get('/metrics')).text;
      const after = await info('used_memory');
      const gauge = (name: string) =>
        Number(new RegExp(`^${name}\\{service="subscription-service"\\} (\\S+)$`, 'm').exec(text)?.[1]);
      // Other test files share this Redis: the reading lies between the two around it, give or take 4 MB.
      expect(gauge('redis_memory_used_bytes')).toBeGreaterThan(0);
      expect(gauge('redis_memory_used_bytes')).toBeGreaterThan(Math.min(before, after) - 4 * 2 ** 20);
      expect(gauge('redis_memory_used_bytes')).toBeLessThan(Math.max(before, after) + 4 * 2 ** 20);
      expect(gauge('redis_memory_max_bytes')).toBe(await info('maxmemory'));
    } finally {
      redis.disconnect();
    }
  });

  it('exports the outbox backlog and the last run of each scheduled job', async () => {
    await api.prisma.outboxEntry.create({
      data: {
        queue: 'email',
        jobName: 'x',
        jobId: 'metrics-outbox',
        payload: {},
        createdAt: new Date(Date.now() - 120_000),
      },
    });
    await api.prisma.jobRun.upsert({
      where: { name: 'metrics-job' },
      create: { name: 'metrics-job', lastFinishedAt: new Date(Date.now() - 60_000), lastStatus: 'failed' },
      update: {},
    });
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(text).toMatch(/^outbox_pending\{service="subscription-service"\} 1$/m);
    const oldest = /^outbox_oldest_pending_seconds\{service="subscription-service"\} ([\d.]+)$/m.exec(text);
    expect(Number(oldest?.[1])).toBeGreaterThanOrEqual(120);
    expect(text).toMatch(
      /^scheduled_job_last_run_failed\{job_name="metrics-job",service="subscription-service"\} 1$/m,
    );
    const since = /^scheduled_job_seconds_since_finished\{job_name="metrics-job",[^}]*\} ([\d.]+)$/m.exec(
      text,
    );
    expect(Number(since?.[1])).toBeGreaterThanOrEqual(60);
    await api.prisma.outboxEntry.update({
      where: { jobId: 'metrics-outbox' },
      data: { dispatchedAt: new Date() },
    });
    const after = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(after).toMatch(/^outbox_pending\{service="subscription-service"\} 0$/m);
    expect(after).toMatch(/^outbox_oldest_pending_seconds\{service="subscription-service"\} 0$/m);
  });

  it('counts webhooks, credits and e-mails', async () => {
    const delivery = signIdentityEvent(
      identityUserEvent('user.created', 'user_metered', 'metered@example.com'),
    );
    expect((await deliverIdentity(api, delivery)).status).toBe(200);
    await deliverIdentity(api, delivery);
    const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_metered' } });
    await api.prisma.$transaction((tx) =>
      api.app.get(CreditsService).grant(tx, { userId: user.id, amount: 7, jobId: 'metrics-grant' }),
    );
    // The API counts what it accepted; the worker counts what it applied.
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(text).toMatch(
      /webhook_events_total\{provider="identity",outcome="accepted",service="subscription-service"\} 1/,
    );
    expect(text).toMatch(
      /webhook_events_total\{provider="identity",outcome="duplicate",service="subscription-service"\} 1/,
    );
    expect((await request(worker.getHttpServer()).get('/metrics')).text).toMatch(
      /webhook_events_total\{provider="identity",outcome="processed",service="subscription-service"\} 1/,
    );
    // Failed deliveries (replayable) are a gauge read from the archive at scrape time.
    await api.prisma.webhookEvent.create({
      data: {
        provider: 'billing',
        eventId: 'evt_metrics_failed',
        eventType: 'x',
        payload: {},
        status: 'FAILED',
      },
    });
    expect(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()).toMatch(
      /webhook_events_pending\{provider="billing",status="FAILED",service="subscription-service"\} 1/,
    );
    expect(text).toMatch(/credits_total\{kind="grant",service="subscription-service"\} 7/);

    await worker
      .get(EmailService)
      .sendTemplate({ userId: user.id, templateKey: 'welcome', idempotencyKey: 'metrics-mail' });
    const workerText = (await request(worker.getHttpServer()).get('/metrics')).text;
    expect(workerText).toMatch(
      /emails_total\{kind="transactional",status="sent",service="subscription-service"\} [1-9]/,
    );
  });
});
