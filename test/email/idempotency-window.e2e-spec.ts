import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { HttpClient } from '../../src/infra/http/http-client.js';
import { BroadcastDispatcher } from '../../src/modules/broadcasts/broadcast-dispatcher.js';
import { DispatchInterrupted } from '../../src/modules/broadcasts/broadcast-sender.js';
import { EmailService } from '../../src/modules/email/email.service.js';
import { EmailSendBudget } from '../../src/modules/email/send-budget.js';
import { RedisService } from '../../src/infra/redis/redis.service.js';
import { createAudience, createMember } from '../factories/audience.factory.js';
import { FakeEmailApi } from '../fakes/email-api.js';
import { signupDay } from '../support/broadcast-runs.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

const HOUR = 3_600_000;

/**
 * Resend keeps an idempotency key 24 h. An e-mail whose request may have been taken (its answer was lost)
 * is resent under its key only while the provider still knows the key: a day later the same key is a new
 * request and delivers the e-mail a second time. Past the window such an e-mail is recorded `failed`
 * (outcome unknown) without a request, as one whose budget is spent (decisions/email.md).
 */
describe('e-mail idempotency window: no resend under a key the provider has forgotten', () => {
  let fake: FakeEmailApi;
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;
  let budget: EmailSendBudget;

  beforeAll(async () => {
    fake = await FakeEmailApi.start();
    // A lost answer is a request that hangs: give up on it after 1.5 s instead of 30.
    env = await TestEnv.create({ env: { ...fake.env(), HTTP_TIMEOUT_MS: '1500' } });
    env.onClose(() => fake.close());
    api = await env.startApi();
    worker = await env.startWorker();
    worker.get(HttpClient).backoffBaseMs = 5;
    budget = worker.get(EmailSendBudget);
  });
  afterAll(() => env.close());
  beforeEach(() => {
    fake.reset();
    budget.now = () => Date.now();
  });

  /** A day and an hour later: the provider has forgotten every key it held. */
  const aDayLater = () => {
    budget.now = () => Date.now() + 25 * HOUR;
    fake.expireIdempotencyKeys();
  };

  it('does not resend a broadcast batch whose answer was lost once the provider has forgotten its key', async () => {
    const { createdAt, audience } = signupDay(2031, 1);
    const members = await createAudience(api.prisma, 'window', 5, { consent: true, createdAt });
    const run = await api.prisma.broadcastRun.create({
      data: { templateKey: 'newsletter', kind: 'marketing', audience, createdBy: 'user:user_admin' },
    });
    const dispatcher = worker.get(BroadcastDispatcher);

    // The provider takes the batch (and delivers it); its answer never comes and the worker stops.
    fake.hangAfter(0);
    const stop = new AbortController();
    const first = dispatcher.run(run.id, stop.signal);
    await waitFor(async () => fake.hungCount === 1, 10_000);
    stop.abort();
    await expect(first).rejects.toBeInstanceOf(DispatchInterrupted);
    fake.stopHanging();
    expect(fake.deliveries).toHaveLength(5);

    // No worker for a day: the job is resumed after the provider's window.
    aDayLater();
    const outcome = await dispatcher.run(run.id);

    const perAddress = new Map<string, number>();
    for (const d of fake.deliveries) perAddress.set(d.to, (perAddress.get(d.to) ?? 0) + 1);
    expect([...perAddress.values()]).toEqual([1, 1, 1, 1, 1]);
    expect(fake.requests).toHaveLength(1);
    // The outcome is unknown (the provider may have delivered it): recorded failed, as a spent budget is.
    expect(outcome).toMatchObject({ status: 'failed', counts: { sent: 0, failed: 5 } });
    const rows = await api.prisma.broadcastRecipient.findMany({ where: { runId: run.id } });
    expect(rows.map((r) => r.status)).toEqual(members.map(() => 'failed'));
    expect(rows[0].error).toMatch(/idempotency window/);
  });

  it('does not resend a single e-mail whose answer was lost once the provider has forgotten its key', async () => {
    const user = await createMember(api.prisma, 'window-single', { consent: true });
    const email = worker.get(EmailService);
    const job = { userId: user.id, templateKey: 'welcome', idempotencyKey: `window-${user.id}` };

    // Taken and delivered, the answer lost; the retry hears "still processing": the job will be retried.
    fake.hangAfter(0);
    const first = email.sendTemplate(job);
    await waitFor(async () => fake.hungCount === 1, 10_000);
    fake.stopHanging();
    fake.failNext(1, 409, {}, 'concurrent_idempotent_requests');
    await expect(first).rejects.toMatchObject({ kind: 'conflict' });
    expect(fake.deliveredTo(user.email)).toHaveLength(1);

    aDayLater();
    const outcome = await email.sendTemplate(job);
    expect(fake.deliveredTo(user.email)).toHaveLength(1);
    expect(outcome).toMatchObject({ status: 'failed' });
    expect(outcome.reason).toMatch(/idempotency window/);
  });

  it('keeps the time of the first request as long as the count, and reads a count without it as past the window', async () => {
    const user = await createMember(api.prisma, 'window-expiry', { consent: true });
    const redis = worker.get(RedisService);
    const idempotencyKey = `expiry-${user.id}`;
    const countKey = redis.key('email', 'requests', idempotencyKey);
    const firstKey = redis.key('email', 'first-request', idempotencyKey);
    const expiries = async () => {
      const replies = await redis.client.multi().pexpiretime(countKey).pexpiretime(firstKey).exec();
      return replies!.map(([, at]) => Number(at));
    };
    // Two requests whose answers were lost, a moment apart (two job attempts).
    await budget.count(idempotencyKey);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await budget.count(idempotencyKey);
    // The later request moved the count's expiry: the first request's time expires with it, not before.
    const [countExpiry, firstExpiry] = await expiries();
    expect(firstExpiry).toBeGreaterThanOrEqual(countExpiry);

    // A count whose first time is gone (expired before it under the earlier rule) is not a fresh budget:
    // when that request was made is unknown, so it may be past the provider's window.
    await redis.client.del(firstKey);
    expect(await budget.state(idempotencyKey)).toMatchObject({ used: 2, left: 0 });
    const outcome = await worker
      .get(EmailService)
      .sendTemplate({ userId: user.id, templateKey: 'welcome', idempotencyKey });
    expect(outcome).toMatchObject({ status: 'failed' });
    expect(outcome.reason).toMatch(/idempotency window/);
    expect(fake.requests).toHaveLength(0);
  });

  it('still sends, past the window, an e-mail that never made a request', async () => {
    const user = await createMember(api.prisma, 'window-fresh', { consent: true });
    aDayLater();
    const outcome = await worker
      .get(EmailService)
      .sendTemplate({ userId: user.id, templateKey: 'welcome', idempotencyKey: `fresh-${user.id}` });
    expect(outcome.status).toBe('sent');
    expect(fake.deliveredTo(user.email)).toHaveLength(1);
  });
});
