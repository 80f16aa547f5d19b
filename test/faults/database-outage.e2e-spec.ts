import { createUser } from '../factories/user.factory.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { User } from '../../src/generated/prisma/client.js';
import { PrismaService } from '../../src/infra/prisma/prisma.service.js';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import { JOBS } from '../../src/infra/queue/queues.js';
import { TcpProxy } from '../fakes/tcp-proxy.js';
import { checkoutToken, deliver, newSubId, PRICE, subscriptionEvent } from '../support/billing.js';
import { identityUserEvent, signIdentityEvent } from '../support/identity-webhook.js';
import { ProbeModule } from '../support/probe.module.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';
import { withOutcome } from '../support/webhooks.js';
import {
  directDb,
  startWorkerProcess,
  sweepRoutes,
  timed,
  undocumentedOutcomes,
  type WorkerProcess,
} from './fault-helpers.js';

/**
 * PostgreSQL goes away under a running API and a running worker process (a TCP proxy between them and
 * the database is cut) and comes back. Nothing restarts.
 */
describe('fault injection: the database goes away and comes back', () => {
  let env: TestEnv;
  let proxy: TcpProxy;
  let api: ApiApp;
  let worker: WorkerProcess;
  let db: PrismaService;
  let authorization: string;
  let sweeper: string;
  let payer: User;
  let subscriptionCreated: ReturnType<typeof subscriptionEvent>;
  const identitySignup = signIdentityEvent(
    identityUserEvent('user.created', 'user_outage_signup', 'outage-signup@example.com'),
  );

  beforeAll(async () => {
    env = await TestEnv.create({ env: { ADMIN_EMAILS: 'admin@example.com,sweeper@example.com' } });
    db = directDb(env);
    proxy = await TcpProxy.start(env.config.database.url);
    env.onClose(() => proxy.close());
    const proxied = proxy.rewrite(env.config.database.url);
    api = await env.startApi({ modules: [ProbeModule], config: env.configWith({ DATABASE_URL: proxied }) });
    worker = await startWorkerProcess(env, { DATABASE_URL: proxied });
    authorization = `Bearer ${await env.idp.token({ sub: 'user_fault', email: 'fault@example.com' }, { expiresIn: 600 })}`;
    sweeper = await api.bearer('user_sweeper', 'sweeper@example.com');
    expect((await api.http.get('/api/v1/me').set('Authorization', sweeper)).status).toBe(200);
    expect((await api.http.get('/api/v1/probe/whoami').set('Authorization', authorization)).status).toBe(200);
    payer = await createUser(db, { identityUserId: 'user_payer', email: 'payer@example.com' });
    subscriptionCreated = subscriptionEvent({
      type: 'subscription.created',
      subId: newSubId(),
      priceId: PRICE.PRO,
      token: checkoutToken(api, payer, 'PRO'),
      occurredAt: new Date(Date.now() - 60_000),
    });
  });
  afterAll(() => env.close());

  /** Rows a webhook would write; all must stay untouched by a delivery refused during the outage. */
  const webhookFootprint = async () => ({
    processed: await db.processedWebhookEvent.count(),
    archived: await db.webhookEvent.count(),
    subscriptions: await db.subscription.count(),
    credits: await db.creditTransaction.count(),
    outbox: await db.outboxEntry.count(),
    audit: await db.auditLog.count({ where: { actor: { startsWith: 'webhook:' } } }),
    users: await db.user.count(),
  });

  /** The signup delivery; when accepted, waits until the worker process applied it. */
  const deliverSignup = async () => {
    const res = await api.http
      .post('/webhooks/identity')
      .set(identitySignup.headers)
      .send(identitySignup.body);
    return withOutcome(api, 'identity', identitySignup.id, res);
  };

  const expectUnavailable = (res: { status: number; headers: Record<string, string>; body: unknown }) => {
    expect(res.status).toBe(503);
    expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(res.body).toMatchObject({ status: 503, code: 'dependency_unavailable' });
    expect(res.headers['retry-after']).toBeDefined();
    // Internals (driver errors, hosts, SQL) never reach the client.
    expect(JSON.stringify(res.body)).not.toMatch(/ECONN|127\.0\.0\.1|postgres|prisma|SELECT|INSERT/i);
  };

  describe('while the database is cut', () => {
    beforeAll(() => proxy.cut());

    it('keeps liveness, fails readiness naming the database with the raw error, shows it down', async () => {
      expect((await api.http.get('/health')).status).toBe(200);

      const ready = await api.http.get('/health/ready');
      expect(ready.status).toBe(503);
      expect(ready.body.ok).toBe(false);
      const database = ready.body.checks.find((c: { name: string }) => c.name === 'database');
      expect(database).toMatchObject({ name: 'database', ok: false });
      // The raw exception text (operators read it), not a generic word.
      expect(database.message).not.toMatch(/^(failed|ok)$/);
      expect(database.message).toMatch(/ECONNRESET|terminated|closed|connect|socket/i);
      expect(ready.body.checks.find((c: { name: string }) => c.name === 'redis')).toMatchObject({ ok: true });

      const status = await api.http.get('/status');
      expect(status.status).toBe(200);
      expect(status.body.overall).toBe('down');
      expect(status.body.components).toContainEqual({ name: 'database', status: 'down' });
      expect(JSON.stringify(status.body)).not.toMatch(/ECONN|terminated/);
    });

    it('answers API routes with 503 problem+json', async () => {
      expectUnavailable(await api.http.get('/api/v1/probe/whoami').set('Authorization', authorization));
      expectUnavailable(await api.http.get('/api/v1/credits').set('Authorization', authorization));
    });

    it('answers every documented route within seconds, never 500, never a success that needs the database', async () => {
      const outcomes = await sweepRoutes(api, sweeper);
      expect(outcomes.filter((o) => o.status === 0 || o.status === 500 || o.ms > 6000)).toEqual([]);
      // Every answer is one openapi.json documents for its route, code included.
      expect(await undocumentedOutcomes(api, outcomes)).toEqual([]);
      expect(outcomes.filter((o) => o.status < 300).map((o) => o.route)).toEqual([
        'GET /health',
        'GET /status',
      ]);
      expect(outcomes.filter((o) => o.status === 503).length).toBeGreaterThan(30);
    });

    it('answers the billing webhook 503 so the provider retries, and writes nothing', async () => {
      const before = await webhookFootprint();
      const res = await deliver(api, subscriptionCreated);
      expectUnavailable(res);
      expect(await webhookFootprint()).toEqual(before);
    });

    it('answers the identity webhook 503 so the provider retries, and writes nothing', async () => {
      const before = await webhookFootprint();
      expectUnavailable(await deliverSignup());
      expect(await webhookFootprint()).toEqual(before);
    });

    it('fails within seconds, not hanging, when the network swallows packets (blackhole)', async () => {
      proxy.cut('blackhole');
      try {
        const [route, ready] = await Promise.all([
          timed(() => api.http.get('/api/v1/probe/whoami').set('Authorization', authorization)),
          timed(() => api.http.get('/health/ready')),
        ]);
        // Bounded by the pool's 5 s connection timeout and the 2.5 s health check timeout.
        expectUnavailable(route.value);
        expect(route.ms).toBeLessThan(8000);
        expect(ready.value.status).toBe(503);
        expect(ready.ms).toBeLessThan(4000);
      } finally {
        proxy.cut('reset');
      }
    });

    it('keeps the worker process running; its jobs fail and wait for their retry', async () => {
      const job = await api.app
        .get(QueueService)
        .queue('email')
        .add(
          JOBS.sendEmail.name,
          { userId: payer.id, templateKey: 'welcome', idempotencyKey: 'outage-email' },
          { jobId: 'outage-email' },
        );
      // The first attempt fails on the database and the job goes back to wait out its backoff.
      await waitFor(async () => (await job.getState()) === 'delayed', 10_000, 100);
      const failed = await api.app.get(QueueService).queue('email').getJob('outage-email');
      expect(failed!.attemptsMade).toBeGreaterThanOrEqual(1);
      expect(failed!.failedReason).toBeTruthy();

      expect(worker.child.exitCode).toBeNull();
      expect((await fetch(worker.healthUrl)).status).toBe(200);
      expect(worker.stderr()).toBe('');
    });
  });

  describe('after the database returns (no restart)', () => {
    beforeAll(async () => {
      proxy.restore();
      await waitFor(async () => (await api.http.get('/health/ready')).status === 200, 10_000, 100);
    });

    it('serves API routes again', async () => {
      const res = await api.http.get('/api/v1/probe/whoami').set('Authorization', authorization);
      expect(res.status).toBe(200);
      expect((await api.http.get('/status')).body.overall).not.toBe('down');
    });

    it("processes the billing provider's redelivery exactly once", async () => {
      const res = await deliver(api, subscriptionCreated);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ received: true, status: 'accepted' });
      expect(res.outcome).toBe('processed');
      const again = await deliver(api, subscriptionCreated);
      expect(again.body).toEqual({ received: true, status: 'duplicate' });

      const subscriptions = await db.subscription.findMany({ where: { userId: payer.id } });
      expect(subscriptions).toHaveLength(1);
      expect(subscriptions[0]).toMatchObject({ status: 'ACTIVE', tier: 'PRO' });
      const grants = await db.creditTransaction.findMany({ where: { userId: payer.id, kind: 'grant' } });
      expect(grants).toHaveLength(1);
      const user = await db.user.findUniqueOrThrow({ where: { id: payer.id } });
      expect(user.creditBalance).toBe(grants[0].delta);
      expect(user.currentTier).toBe('PRO');
      const archive = await db.webhookEvent.findMany({ where: { eventId: subscriptionCreated.event_id } });
      expect(archive).toEqual([expect.objectContaining({ status: 'PROCESSED' })]);
    });

    it("processes the identity provider's redelivery exactly once", async () => {
      const res = await deliverSignup();
      expect(res.status).toBe(200);
      expect(res.outcome).toBe('processed');
      expect((await deliverSignup()).body.status).toBe('duplicate');
      expect(await db.user.count({ where: { identityUserId: 'user_outage_signup' } })).toBe(1);
      expect(
        await db.auditLog.count({ where: { action: 'user.created', userId: 'user_outage_signup' } }),
      ).toBe(1);
    });

    it('lets the worker process again: the retried job and the new events’ e-mails go out once', async () => {
      const signup = await db.user.findUniqueOrThrow({ where: { identityUserId: 'user_outage_signup' } });
      const sent = (where: object) => db.emailMessage.findMany({ where: { status: 'sent', ...where } });
      // The job that failed during the outage (its backoff retry), the signup's welcome e-mail (post-signup
      // hooks) and the subscription's welcome e-mail (outbox).
      await waitFor(
        async () =>
          (await sent({ idempotencyKey: 'outage-email' })).length === 1 &&
          (await sent({ userId: signup.id, templateKey: 'welcome' })).length === 1 &&
          (await sent({ userId: payer.id, templateKey: 'subscription_welcome' })).length === 1,
        20_000,
        100,
      );
      expect(await db.emailMessage.count({ where: { userId: { in: [payer.id, signup.id] } } })).toBe(3);
      expect(worker.child.exitCode).toBeNull();
    });
  });

  it('logs, not crashes, when the server ends an idle connection while the pool shuts down', async () => {
    const prisma = new PrismaService(env.config);
    const [{ pid }] = await prisma.$queryRaw<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
    // onModuleDestroy's first step: Prisma lets go of the pool (and of its error listener) before
    // pool.end() has closed the sockets. The server ending a connection now (a restart, DROP DATABASE
    // ... FORCE) is an 'error' event on the pool; without a listener it would crash the process.
    await prisma.$disconnect();
    expect(prisma.pool.listenerCount('error')).toBeGreaterThan(0);
    await db.$executeRaw`SELECT pg_terminate_backend(${pid}::int)`;
    await waitFor(async () => prisma.pool.totalCount === 0);
    await prisma.pool.end();
  });
});
