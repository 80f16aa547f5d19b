import { createUser } from '../factories/user.factory.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { User } from '../../src/generated/prisma/client.js';
import { OutboxService } from '../../src/infra/queue/outbox.service.js';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import { JOBS } from '../../src/infra/queue/queues.js';
import { UnsubscribeTokens } from '../../src/modules/email/unsubscribe-tokens.js';
import { WebhookInboxService } from '../../src/modules/webhooks/webhook-inbox.service.js';
import { createAudience } from '../factories/audience.factory.js';
import { FakeEmailApi } from '../fakes/email-api.js';
import { FakeLlmServer } from '../fakes/llm-server.js';
import { TcpProxy } from '../fakes/tcp-proxy.js';
import { checkoutToken, newSubId, PRICE, send, subscriptionEvent } from '../support/billing.js';
import { grantCredits } from '../support/credits.js';
import { identityUserEvent, signIdentityEvent } from '../support/identity-webhook.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';
import { settled } from '../support/webhooks.js';
import {
  startWorkerProcess,
  sweepRoutes,
  timed,
  undocumentedOutcomes,
  type WorkerProcess,
} from './fault-helpers.js';

const COMPLETION = { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 10 };

/**
 * Redis goes away under a running API and a running worker process (both reach it through a TCP proxy
 * the test cuts) and comes back. PostgreSQL stays up: what commits must not lose its follow-up work.
 */
describe('fault injection: Redis goes away and comes back', () => {
  let env: TestEnv;
  let proxy: TcpProxy;
  let api: ApiApp;
  let worker: WorkerProcess;
  let mail: FakeEmailApi;
  let llm: FakeLlmServer;
  let admin: string;
  let sweeper: string;
  let customer: { user: User; auth: string };
  let payer: User;
  let subId: string;
  let billingEventId: string;
  let broadcastId: string;
  const archived = (provider: 'billing' | 'identity', eventId: string) =>
    api.prisma.webhookEvent.findUnique({ where: { provider_eventId: { provider, eventId } } });
  const signup = signIdentityEvent(
    identityUserEvent('user.created', 'user_redis_signup', 'redis-signup@example.com'),
  );

  beforeAll(async () => {
    [mail, llm] = await Promise.all([FakeEmailApi.start(), FakeLlmServer.start()]);
    env = await TestEnv.create({
      env: {
        ...mail.env(),
        LLM_BASE_URL: llm.baseUrl,
        ADMIN_EMAILS: 'admin@example.com,sweeper@example.com',
      },
    });
    env.onClose(() => Promise.all([mail.close(), llm.close()]).then(() => undefined));
    proxy = await TcpProxy.start(env.config.redis.url);
    env.onClose(() => proxy.close());
    const REDIS_URL = proxy.rewrite(env.config.redis.url);
    api = await env.startApi({ config: env.configWith({ REDIS_URL }) });
    worker = await startWorkerProcess(env, { REDIS_URL });

    // Users made directly in the database: no signup e-mails of their own to count.
    await createUser(api.prisma, { identityUserId: 'user_admin', email: 'admin@example.com' });
    admin = await api.bearer('user_admin', 'admin@example.com');
    const user = await createUser(api.prisma, { identityUserId: 'user_ai', email: 'ai@example.com' });
    await grantCredits(api, user.id, 100);
    customer = { user, auth: await api.bearer('user_ai', 'ai@example.com') };
    payer = await createUser(api.prisma, { identityUserId: 'user_payer', email: 'payer@example.com' });
    await createAudience(api.prisma, 'redis', 3, { consent: true, tier: 'TEAM' });
    sweeper = await api.bearer('user_sweeper', 'sweeper@example.com');
    expect((await api.http.get('/api/v1/me').set('Authorization', sweeper)).status).toBe(200);
  });
  afterAll(() => env.close());

  const outboxEntry = (jobId: string) => api.prisma.outboxEntry.findUniqueOrThrow({ where: { jobId } });

  describe('while Redis is cut', () => {
    beforeAll(async () => {
      // Work that is already queued when Redis goes away: due during the outage, run after it.
      await api.app
        .get(QueueService)
        .add(
          JOBS.sendEmail,
          { userId: payer.id, templateKey: 'welcome', idempotencyKey: 'queued-before-outage' },
          { jobId: 'queued-before-outage', delay: 1500 },
        );
      proxy.cut();
    });

    it('keeps liveness, fails readiness naming Redis with the raw error, shows it down', async () => {
      expect((await api.http.get('/health')).status).toBe(200);
      const { value: ready, ms } = await timed(() => api.http.get('/health/ready'));
      expect(ms).toBeLessThan(4000);
      expect(ready.status).toBe(503);
      const redis = ready.body.checks.find((c: { name: string }) => c.name === 'redis');
      expect(redis).toMatchObject({ name: 'redis', ok: false });
      expect(redis.message).not.toMatch(/^(failed|ok)$/);
      expect(ready.body.checks.find((c: { name: string }) => c.name === 'database')).toMatchObject({
        ok: true,
      });
      const status = await api.http.get('/status');
      expect(status.status).toBe(200);
      expect(status.body.components).toContainEqual({ name: 'redis', status: 'down' });
    });

    it('refuses rate-limited routes with 503 quickly, charging nothing', async () => {
      const { value: res, ms } = await timed(() =>
        api.http.post('/api/v1/ai/completions').set('Authorization', customer.auth).send(COMPLETION),
      );
      expect(ms).toBeLessThan(5000);
      expect(res.status).toBe(503);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 503, code: 'rate_limiter_unavailable' });
      expect(llm.requests).toHaveLength(0);
      expect(await api.prisma.creditTransaction.count({ where: { userId: customer.user.id } })).toBe(1);
    });

    it('still unsubscribes through a valid one-click link: the per-user e-mail link bound fails open', async () => {
      const member = await createUser(api.prisma, {
        identityUserId: 'user_redis_unsubscribe',
        email: 'redis-unsubscribe@example.com',
        marketingConsentGiven: true,
      });
      const token = api.app.get(UnsubscribeTokens).sign(member.id);
      const { value: res, ms } = await timed(() =>
        api.http
          .post(`/api/v1/email/unsubscribe?t=${encodeURIComponent(token)}`)
          .type('form')
          .send('List-Unsubscribe=One-Click'),
      );
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { unsubscribed: true } });
      expect(ms).toBeLessThan(3000);
      const after = await api.prisma.user.findUniqueOrThrow({ where: { id: member.id } });
      expect(after.marketingConsentGiven).toBe(false);
    });

    it('accepts a billing webhook within the provider timeout; the archive row waits for the worker', async () => {
      subId = newSubId();
      const event = subscriptionEvent({
        type: 'subscription.created',
        subId,
        priceId: PRICE.PRO,
        token: checkoutToken(api, payer, 'PRO'),
        occurredAt: new Date(Date.now() - 60_000),
      });
      billingEventId = event.event_id;
      const { value: res, ms } = await timed(() => send(api, event));
      expect(ms).toBeLessThan(3000);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ received: true, status: 'accepted' });
      // The row is the durable record: its job could not be pushed, so nothing is applied yet.
      expect(await archived('billing', event.event_id)).toMatchObject({ status: 'RECEIVED' });
      expect(await api.prisma.subscription.count({ where: { providerSubscriptionId: subId } })).toBe(0);
    });

    it('accepts an identity signup; it waits as a RECEIVED archive row', async () => {
      const { value: res, ms } = await timed(() =>
        api.http.post('/webhooks/identity').set(signup.headers).send(signup.body),
      );
      expect(ms).toBeLessThan(3000);
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('accepted');
      expect(await archived('identity', signup.id)).toMatchObject({ status: 'RECEIVED' });
    });

    it('accepts a broadcast (queue-backed through the outbox) and leaves it queued', async () => {
      const { value: res, ms } = await timed(() =>
        api.http
          .post('/api/v1/admin/broadcasts')
          .set('Authorization', admin)
          .send({ template_key: 'newsletter', audience: { tiers: ['TEAM'] } }),
      );
      expect(ms).toBeLessThan(3000);
      expect(res.status).toBe(201);
      broadcastId = res.body.id;
      expect(res.body.status).toBe('queued');
      expect((await outboxEntry(`broadcast-${broadcastId}`)).dispatchedAt).toBeNull();
    });

    it('serves admin stats with the queues marked unavailable', async () => {
      const { value: res, ms } = await timed(() =>
        api.http.get('/api/v1/admin/stats').set('Authorization', admin),
      );
      expect(ms).toBeLessThan(4000);
      expect(res.status).toBe(200);
      expect(res.body.queues).toMatchObject({ available: false, by_name: null, error: expect.any(String) });
      expect(res.body.outbox.pending).toBeGreaterThanOrEqual(1);
    });

    it('keeps every entry and every accepted webhook when the relays run during the outage', async () => {
      const { value: pushed, ms } = await timed(() => api.app.get(OutboxService).relay(500, 0));
      expect(pushed).toBe(0);
      expect(ms).toBeLessThan(6000);
      expect(await api.prisma.outboxEntry.count({ where: { dispatchedAt: null } })).toBeGreaterThanOrEqual(1);
      await expect(api.app.get(WebhookInboxService).relay(0)).rejects.toThrow();
      expect(await archived('billing', billingEventId)).toMatchObject({ status: 'RECEIVED' });
    });

    it('fails quickly, not hanging, when the network swallows packets (blackhole)', async () => {
      proxy.cut('blackhole');
      try {
        const { value: res, ms } = await timed(() =>
          api.http.post('/api/v1/ai/completions').set('Authorization', customer.auth).send(COMPLETION),
        );
        expect(res.status).toBe(503);
        expect(ms).toBeLessThan(4000);
        // A webhook still commits and answers well inside the provider's timeout (Paddle waits 5 s).
        const event = subscriptionEvent({
          type: 'subscription.created',
          subId: newSubId(),
          priceId: PRICE.PRO,
          token: checkoutToken(api, customer.user, 'PRO'),
          occurredAt: new Date(Date.now() - 60_000),
        });
        const webhook = await timed(() => send(api, event));
        expect(webhook.value.body).toEqual({ received: true, status: 'accepted' });
        expect(webhook.ms).toBeLessThan(3000);
      } finally {
        proxy.cut('reset');
      }
    });

    it('answers every documented route within seconds, never 500', async () => {
      const outcomes = await sweepRoutes(api, sweeper);
      expect(outcomes.filter((o) => o.status === 0 || o.status === 500 || o.ms > 6000)).toEqual([]);
      // Every answer is one openapi.json documents for its route, code included.
      expect(await undocumentedOutcomes(api, outcomes)).toEqual([]);
    });

    it('keeps the worker process alive, logging the outage as structured warnings', async () => {
      expect(worker.child.exitCode).toBeNull();
      expect((await fetch(worker.healthUrl)).status).toBe(200);
      const warnings = worker
        .stdout()
        .split('\n')
        .filter((line) => line.includes('queue connection error'))
        .map((line) => JSON.parse(line) as { level: number; source: string; err: unknown });
      expect(warnings.map((w) => w.source)).toEqual(expect.arrayContaining(['worker:email', 'queue:email']));
      expect(warnings.every((w) => w.level === 40 && typeof w.err === 'string' && w.err.length > 0)).toBe(
        true,
      );
      // One line per source per 30 s, and no raw stack traces on stderr (BullMQ's fallback without a
      // listener prints every failed reconnect there).
      expect(warnings.length).toBeLessThanOrEqual(36);
      expect(worker.stderr()).toBe('');
    });
  });

  describe('after Redis returns (no restart)', () => {
    beforeAll(async () => {
      proxy.restore();
      await waitFor(async () => (await api.http.get('/health/ready')).status === 200, 10_000, 100);
    });

    it('relays the accepted webhooks and the outbox, and the worker does each piece of work exactly once', async () => {
      // The worker process relays every 10 s; the test runs the same relays now instead of waiting. The
      // worker's relay may still take some first: either way everything is pushed, and job ids dedupe.
      await api.app.get(WebhookInboxService).relay(0);
      await settled(api, 'billing', billingEventId, 20_000);
      await settled(api, 'identity', signup.id, 20_000);
      const sub = await api.prisma.subscription.findUniqueOrThrow({
        where: { providerSubscriptionId: subId },
      });
      expect(sub).toMatchObject({ userId: payer.id, status: 'ACTIVE', tier: 'PRO' });
      expect(await api.prisma.creditTransaction.count({ where: { userId: payer.id, kind: 'grant' } })).toBe(
        1,
      );
      const outbox = api.app.get(OutboxService);
      await outbox.relay(500, 0);
      await waitFor(
        async () => (await api.prisma.outboxEntry.count({ where: { dispatchedAt: null } })) === 0,
      );

      const signupUser = await api.prisma.user.findUniqueOrThrow({
        where: { identityUserId: 'user_redis_signup' },
      });
      const run = () => api.prisma.broadcastRun.findUniqueOrThrow({ where: { id: broadcastId } });
      const sent = () =>
        api.prisma.emailMessage.findMany({
          where: { userId: { in: [payer.id, signupUser.id] }, status: 'sent' },
        });
      // The subscription's welcome e-mail and the job queued before the outage (payer), the signup's
      // welcome e-mail (post-signup hooks), the broadcast.
      await waitFor(async () => (await sent()).length === 3 && (await run()).status === 'done', 20_000, 100);
      // A second relay finds nothing; a re-push of a dispatched job id would be deduplicated anyway.
      expect(await outbox.relay(500, 0)).toBe(0);
      expect(await api.app.get(WebhookInboxService).relay(0)).toBe(0);

      expect((await sent()).map((m) => m.templateKey).sort()).toEqual([
        'subscription_welcome',
        'welcome',
        'welcome',
      ]);
      expect(mail.deliveredTo('payer@example.com')).toHaveLength(2);
      expect(mail.deliveredTo('redis-signup@example.com')).toHaveLength(1);
      expect(await run()).toMatchObject({ status: 'done', sentCount: 3, recipientsTotal: 3 });
      expect(mail.deliveries.filter((d) => d.to.startsWith('redis-'))).toHaveLength(4); // 3 + the signup
      expect(worker.child.exitCode).toBeNull();
    });

    it('serves rate-limited routes again', async () => {
      const res = await api.http
        .post('/api/v1/ai/completions')
        .set('Authorization', customer.auth)
        .send(COMPLETION);
      expect(res.status).toBe(200);
      const stats = await api.http.get('/api/v1/admin/stats').set('Authorization', admin);
      expect(stats.body.queues).toMatchObject({ available: true, error: null });
    });
  });
});
