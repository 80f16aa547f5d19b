import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import { HttpClient } from '../../src/infra/http/http-client.js';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import { JOBS } from '../../src/infra/queue/queues.js';
import { BroadcastDispatcher } from '../../src/modules/broadcasts/broadcast-dispatcher.js';
import { recipientKey } from '../../src/modules/broadcasts/broadcast-keys.js';
import { DispatchInterrupted } from '../../src/modules/broadcasts/broadcast-sender.js';
import type { User } from '../../src/generated/prisma/client.js';
import { createAudience } from '../factories/audience.factory.js';
import { FakeEmailApi } from '../fakes/email-api.js';
import { deliverEmailEvent, resendEvent, signEmailEvent } from '../support/email-webhook.js';
import { runFinished, signupDay } from '../support/broadcast-runs.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

describe('broadcast resume: a worker restart or crash mid-run sends nobody twice', () => {
  let fake: FakeEmailApi;
  let env: TestEnv;
  let api: ApiApp;
  let admin: string;

  beforeAll(async () => {
    fake = await FakeEmailApi.start();
    env = await TestEnv.create({
      env: {
        ...fake.env(),
      },
    });
    env.onClose(() => fake.close());
    api = await env.startApi();
    admin = await api.bearer('user_admin', 'admin@example.com');
    // The admin's first call creates the user; its welcome e-mail must not count among the test's requests.
    await api.http.get('/api/v1/admin/broadcasts').set('Authorization', admin);
    const worker = await env.startWorker();
    await waitFor(async () => fake.deliveredTo('admin@example.com').length === 1);
    await env.stop(worker);
  });
  afterAll(() => env.close());
  beforeEach(() => fake.reset());

  const run = (id: string) => api.prisma.broadcastRun.findUniqueOrThrow({ where: { id } });
  const finished = (id: string) => runFinished(api.prisma, id);

  /** Each test addresses the users who signed up on its own day (signupDay). */
  const day = (n: number) => signupDay(2030, n);
  const perAddress = () => {
    const counts = new Map<string, number>();
    for (const d of fake.deliveries) counts.set(d.to, (counts.get(d.to) ?? 0) + 1);
    return counts;
  };
  const statuses = async (runId: string, users: User[]) => {
    const rows = await api.prisma.broadcastRecipient.findMany({ where: { runId } });
    const byUser = new Map(rows.map((r) => [r.userId, r.status]));
    return users.map((u) => byUser.get(u.id) ?? null);
  };
  /** A worker whose HTTP retries back off 5 ms instead of 250. */
  const fastWorker = async (): Promise<INestApplication> => {
    const worker = await env.startWorker();
    worker.get(HttpClient).backoffBaseMs = 5;
    return worker;
  };
  /** The interrupted first attempt: the provider delivers the first batch, its answer never comes. */
  const crashAfterFirstBatch = async (audience: object) => {
    fake.hangAfter(0);
    const first = await env.startWorker();
    const res = await api.http
      .post('/api/v1/admin/broadcasts')
      .set('Authorization', admin)
      .send({ template_key: 'newsletter', audience });
    expect(res.status).toBe(201);
    await waitFor(async () => fake.hungCount === 1, 15_000);
    await env.stop(first);
    fake.stopHanging();
    return res.body.id as string;
  };

  it('hands the run back when its worker stops mid-batch, and a new worker finishes it', async () => {
    const members = await createAudience(api.prisma, 'restart', 1000, { consent: true, tier: 'PRO' });
    // Three batches are answered; the fourth is delivered by the provider but its answer never comes.
    fake.hangAfter(3);
    const first = await env.startWorker();
    const res = await api.http
      .post('/api/v1/admin/broadcasts')
      .set('Authorization', admin)
      .send({ template_key: 'newsletter', audience: { tiers: ['PRO'] } });
    expect(res.status).toBe(201);
    await waitFor(async () => fake.hungCount === 1, 15_000);

    await env.stop(first);
    const stopped = await run(res.body.id);
    expect(stopped.status).toBe('running');
    // Three batches settled; the fourth was reserved (pending, with its key) before it was sent.
    const rows = await api.prisma.broadcastRecipient.groupBy({
      by: ['status'],
      where: { runId: stopped.id },
      _count: { _all: true },
    });
    expect(Object.fromEntries(rows.map((r) => [r.status, r._count._all]))).toEqual({
      sent: 300,
      pending: 100,
    });
    expect(stopped.sentCount).toBe(300);
    expect(fake.deliveries).toHaveLength(400);
    const job = await api.app.get(QueueService).queue('broadcasts').getJob(`broadcast-${stopped.id}`);
    expect(await job!.getState()).toBe('waiting');
    expect(job!.attemptsMade).toBe(0);

    fake.stopHanging();
    const second = await env.startWorker();
    const done = await waitFor(async () => {
      const current = await run(stopped.id);
      return current.status === 'done' ? current : null;
    }, 20_000);
    await env.stop(second);
    expect(done).toMatchObject({ sentCount: 1000, failedCount: 0, skippedCount: 0, recipientsTotal: 1000 });

    // Each member got exactly one e-mail: the interrupted batch was resent under the same key and the
    // provider answered it from its idempotency record instead of delivering it again.
    expect(fake.deliveries).toHaveLength(1000);
    const perAddress = new Map<string, number>();
    for (const d of fake.deliveries) perAddress.set(d.to, (perAddress.get(d.to) ?? 0) + 1);
    expect([...perAddress.values()].every((n) => n === 1)).toBe(true);
    expect(new Set(perAddress.keys())).toEqual(new Set(members.map((m) => m.email)));
    const batchKeys = fake.requests.map((r) => r.headers['idempotency-key']);
    expect(batchKeys[4]).toBe(batchKeys[3]);
    expect(fake.requests[4].status).toBe(200);
    expect(await api.prisma.broadcastRecipient.count({ where: { runId: done.id } })).toBe(1000);
    expect(
      await api.prisma.auditLog.count({ where: { action: 'broadcast.finished', resourceId: done.id } }),
    ).toBe(1);
  });

  it('resumes a run left `running` by a crashed worker when its job is delivered again', async () => {
    await api.prisma.user.updateMany({ data: { marketingConsentGiven: false } });
    const members = await createAudience(api.prisma, 'crash', 250, { consent: true, tier: 'TEAM' });
    // The state a killed worker leaves: running, the first 120 recipients recorded (and mailed).
    const crashed = await api.prisma.broadcastRun.create({
      data: {
        templateKey: 'newsletter',
        kind: 'marketing',
        audience: { tiers: ['TEAM'] },
        createdBy: 'user:user_admin',
        status: 'running',
        startedAt: new Date(),
        recipientsTotal: 250,
        sentCount: 120,
      },
    });
    const before = members.slice(0, 120);
    await api.prisma.broadcastRecipient.createMany({
      data: before.map((m) => ({ runId: crashed.id, userId: m.id, status: 'sent' as const })),
    });
    await api.prisma.emailMessage.createMany({
      data: before.map((m) => ({
        userId: m.id,
        toAddress: m.email,
        templateKey: 'newsletter',
        kind: 'marketing',
        subject: 'x',
        status: 'sent',
        idempotencyKey: recipientKey(crashed.id, m.id),
        broadcastRunId: crashed.id,
      })),
    });

    const worker = await env.startWorker();
    await api.app
      .get(QueueService)
      .add(JOBS.dispatchBroadcast, { runId: crashed.id }, { jobId: `broadcast-${crashed.id}` });
    const done = await waitFor(async () => {
      const current = await run(crashed.id);
      return current.status === 'done' ? current : null;
    }, 20_000);
    await env.stop(worker);
    expect(done).toMatchObject({ sentCount: 250, failedCount: 0, recipientsTotal: 250 });
    expect(fake.deliveries.map((d) => d.to).sort()).toEqual(
      members
        .slice(120)
        .map((m) => m.email)
        .sort(),
    );
  });

  it('resends the batch the provider took before a crash under its key, and records it sent, whatever the audience became since', async () => {
    const { createdAt, audience } = day(1);
    const members = await createAudience(api.prisma, 'drift', 10, { consent: true, createdAt });
    const runId = await crashAfterFirstBatch(audience);
    expect(fake.deliveries).toHaveLength(10);
    expect(await statuses(runId, members)).toEqual(members.map(() => 'pending'));

    // Before the resume: one recipient of that batch unsubscribes, one is soft-deleted, and a new user
    // whose id sorts inside the page signs up. A page read afresh would differ, and so would its key.
    const [unsubscribed, deleted] = [members[3], members[6]];
    await api.prisma.user.update({ where: { id: unsubscribed.id }, data: { marketingConsentGiven: false } });
    await api.prisma.user.update({ where: { id: deleted.id }, data: { deletedAt: new Date() } });
    let id = randomUUID();
    while (!(id > members[0].id && id < members[9].id)) id = randomUUID();
    const newcomer = await api.prisma.user.create({
      data: {
        id,
        identityUserId: 'user_drift_newcomer',
        email: 'drift-newcomer@example.com',
        marketingConsentGiven: true,
        createdAt,
      },
    });

    const worker = await fastWorker();
    const done = await finished(runId);
    await env.stop(worker);
    expect(done).toMatchObject({ status: 'done', sentCount: 11, failedCount: 0, skippedCount: 0 });
    // Nobody twice: the stored batch went out again under its stored key, without the two members the
    // send policy now refuses (it may never have reached the provider); the provider, which had the first
    // body under that key, refused the other one (409 invalid_idempotent_request) and delivered nothing.
    // The newcomer came in a page of its own, under a new key.
    const counts = perAddress();
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    expect(new Set(counts.keys())).toEqual(new Set([...members, newcomer].map((u) => u.email)));
    expect(fake.requests.map((r) => `${r.path} ${r.status}`)).toEqual([
      '/emails/batch hung',
      '/emails/batch 409',
      '/emails/batch 200',
    ]);
    const [crashed, resent, next] = fake.requests;
    expect(resent.headers['idempotency-key']).toBe(crashed.headers['idempotency-key']);
    const to = (request: typeof resent) => (request.body as { to: string[] }[]).map((m) => m.to[0]);
    expect(to(resent)).toEqual(
      to(crashed).filter((address) => address !== unsubscribed.email && address !== deleted.email),
    );
    expect(next.headers['idempotency-key']).not.toBe(crashed.headers['idempotency-key']);
    expect(next.body).toHaveLength(1);
    // The batch the provider had went out to all ten, the two left out of the resend included.
    expect(await statuses(runId, [...members, newcomer])).toEqual([...members, newcomer].map(() => 'sent'));
    const logged = await api.prisma.emailMessage.findMany({
      where: { broadcastRunId: runId, userId: { in: [unsubscribed.id, deleted.id] } },
    });
    expect(logged.map((m) => m.status)).toEqual(['sent', 'sent']);
  });

  it('records a resent batch as sent when the provider already holds its key for another body', async () => {
    const { createdAt, audience } = day(2);
    const members = await createAudience(api.prisma, 'relocale', 4, { consent: true, createdAt });
    const runId = await crashAfterFirstBatch(audience);
    // The rendered batch changes (a member switched language): the provider refuses the key for the new
    // body (409 invalid_idempotent_request), which says the first request was taken: it went out then.
    await api.prisma.user.update({ where: { id: members[1].id }, data: { locale: 'de' } });

    const worker = await fastWorker();
    const done = await finished(runId);
    await env.stop(worker);
    expect(done).toMatchObject({ status: 'done', sentCount: 4, failedCount: 0 });
    expect(fake.requests.map((r) => `${r.path} ${r.status}`)).toEqual([
      '/emails/batch hung',
      '/emails/batch 409',
    ]);
    expect(fake.deliveries).toHaveLength(4);
    expect([...perAddress().values()]).toEqual([1, 1, 1, 1]);
    expect(await statuses(runId, members)).toEqual(['sent', 'sent', 'sent', 'sent']);
  });

  describe('dispatching directly (no queue), attempt by attempt', () => {
    let worker: INestApplication;
    let dispatcher: BroadcastDispatcher;

    beforeAll(async () => {
      worker = await fastWorker();
      dispatcher = worker.get(BroadcastDispatcher);
    });
    afterAll(() => env.stop(worker));

    const queuedRun = (audience: object) =>
      api.prisma.broadcastRun.create({
        data: { templateKey: 'newsletter', kind: 'marketing', audience, createdBy: 'user:user_admin' },
      });

    it('retries a batch answered 409 or 5xx under the same key within its budget, never one by one', async () => {
      const { createdAt, audience } = day(3);
      const members = await createAudience(api.prisma, 'ambiguous', 5, { consent: true, createdAt });
      const queued = await queuedRun(audience);

      // The key is still being processed (a concurrent delivery, or our own timed-out request).
      fake.failNext(1, 409, {}, 'concurrent_idempotent_requests');
      await expect(dispatcher.run(queued.id)).rejects.toBeInstanceOf(DispatchInterrupted);
      expect(await statuses(queued.id, members)).toEqual(members.map(() => 'pending'));
      // 5xx twice (the provider may have taken one of them), then answered: the next attempt has the three
      // requests left of the batch's 1 + EMAIL_SEND_RETRIES.
      fake.failNext(2);
      expect(await dispatcher.run(queued.id)).toMatchObject({
        status: 'done',
        counts: { sent: 5, failed: 0 },
      });
      expect(fake.requests.map((r) => `${r.path} ${r.status}`)).toEqual([
        '/emails/batch 409',
        '/emails/batch 503',
        '/emails/batch 503',
        '/emails/batch 200',
      ]);
      expect(new Set(fake.requests.map((r) => r.headers['idempotency-key'])).size).toBe(1);
      expect([...perAddress().values()]).toEqual([1, 1, 1, 1, 1]);
      const shown = await api.http.get(`/api/v1/admin/broadcasts/${queued.id}`).set('Authorization', admin);
      expect(shown.body.counts).toMatchObject({ sent: 5, failed: 0 });
    });

    /** The member withdraws consent in their settings; the address is suppressed by a signed bounce. */
    const unsubscribe = async (user: User) => {
      const res = await api.http
        .patch('/api/v1/me')
        .set('Authorization', await api.bearer(user.identityUserId, user.email))
        .send({ marketing_consent_given: false });
      expect(res.status).toBe(200);
      expect(res.body.marketing_consent_given).toBe(false);
    };
    const bounce = async (user: User) => {
      const delivery = signEmailEvent(
        resendEvent('email-bounced', { providerMessageId: randomUUID(), to: user.email }),
      );
      expect((await deliverEmailEvent(api, delivery)).outcome).toBe('processed');
    };
    const recorded = async (runId: string, users: User[]) => {
      const rows = await api.prisma.broadcastRecipient.findMany({ where: { runId } });
      const logs = await api.prisma.emailMessage.findMany({ where: { broadcastRunId: runId } });
      return users.map((u) => {
        const row = rows.find((r) => r.userId === u.id);
        const log = logs.find((m) => m.userId === u.id);
        return [row?.status, row?.error, log?.status, log?.reason];
      });
    };

    it('does not split a resent batch the provider refuses when an earlier request under its key may have delivered it', async () => {
      const { createdAt, audience } = day(7);
      const members = await createAudience(api.prisma, 'refused-resend', 5, { consent: true, createdAt });
      const queued = await queuedRun(audience);
      // The provider takes the batch (and delivers it); its answer never comes and the worker stops.
      fake.hangAfter(0);
      const stop = new AbortController();
      const first = dispatcher.run(queued.id, stop.signal);
      await waitFor(async () => fake.hungCount === 1, 10_000);
      stop.abort();
      await expect(first).rejects.toBeInstanceOf(DispatchInterrupted);
      fake.stopHanging();
      expect(fake.deliveries).toHaveLength(5);

      // Before the resume a member's address changes to one the provider refuses: the resent body differs,
      // and the provider answers it 422 (nothing of this request delivered; the earlier one was).
      const changed = members[2];
      const refused = `refused-${changed.email}`;
      await api.prisma.user.update({ where: { id: changed.id }, data: { email: refused } });
      fake.rejectAddress(refused);

      const outcome = await dispatcher.run(queued.id);
      // Nobody twice: sent one by one under their own keys, the other four would get it again.
      for (const m of members) expect(fake.deliveredTo(m.email)).toHaveLength(1);
      expect(fake.deliveries).toHaveLength(5);
      expect(fake.requests.map((r) => `${r.path} ${r.status}`)).toEqual([
        '/emails/batch hung',
        '/emails/batch 422',
      ]);
      // The outcome of the earlier request is unknown: recorded failed, as a spent budget is.
      expect(outcome).toMatchObject({ status: 'failed', counts: { sent: 0, failed: 5 } });
      expect((await recorded(queued.id, members)).map(([status]) => status)).toEqual(
        members.map(() => 'failed'),
      );
    });

    it('gates a batch that never reached the provider again on resume: no mail to who unsubscribed or was suppressed since', async () => {
      const { createdAt, audience } = day(5);
      const members = await createAudience(api.prisma, 'regate', 6, { consent: true, createdAt });
      const queued = await queuedRun(audience);
      // Two 5xx, then 409 "still processing" ends the attempt: the batch stays pending under its key with
      // one request left; the provider delivered nothing.
      fake.failNext(2);
      fake.failNext(1, 409, {}, 'concurrent_idempotent_requests');
      await expect(dispatcher.run(queued.id)).rejects.toBeInstanceOf(DispatchInterrupted);
      expect(await statuses(queued.id, members)).toEqual(members.map(() => 'pending'));
      expect(fake.deliveries).toHaveLength(0);

      // Before the next attempt: one member unsubscribes, another's address bounces for good.
      const [withdrawn, suppressed] = [members[1], members[4]];
      await unsubscribe(withdrawn);
      await bounce(suppressed);

      expect(await dispatcher.run(queued.id)).toMatchObject({
        status: 'done',
        counts: { sent: 4, failed: 0, skipped: 2 },
      });
      expect(fake.deliveredTo(withdrawn.email)).toHaveLength(0);
      expect(fake.deliveredTo(suppressed.email)).toHaveLength(0);
      const others = members.filter((m) => m !== withdrawn && m !== suppressed);
      for (const m of others) expect(fake.deliveredTo(m.email)).toHaveLength(1);
      expect(fake.deliveries).toHaveLength(4);
      // The smaller batch went under the stored key (a provider that had the first body would refuse it).
      const last = fake.requests[fake.requests.length - 1];
      expect(`${last.path} ${last.status}`).toBe('/emails/batch 200');
      expect(last.body).toHaveLength(4);
      expect(new Set(fake.requests.map((r) => r.headers['idempotency-key'])).size).toBe(1);
      // The resend made the one request the batch had left.
      expect(fake.requests.map((r) => r.status)).toEqual([503, 503, 409, 200]);
      // Recorded as a first send records them: skipped with the policy's reason, in the e-mail log too.
      expect(await recorded(queued.id, members)).toEqual(
        members.map((m) =>
          m === withdrawn
            ? ['skipped', 'no_consent', 'skipped', 'no_consent']
            : m === suppressed
              ? ['skipped', 'suppressed', 'skipped', 'suppressed']
              : ['sent', null, 'sent', null],
        ),
      );
      const skips = await api.prisma.auditLog.findMany({
        where: {
          action: 'email.skipped',
          userId: { in: [withdrawn.identityUserId, suppressed.identityUserId] },
        },
      });
      expect(skips.map((a) => (a.details as { reason: string }).reason).sort()).toEqual([
        'no_consent',
        'suppressed',
      ]);
    });

    it('gates single sends left pending by an outage again: the rest of the page goes out, not to who opted out', async () => {
      const { createdAt, audience } = day(6);
      const members = await createAudience(api.prisma, 'regate-alone', 9, { consent: true, createdAt });
      const [refused, before, ...rest] = members;
      const [down, untried] = [rest.slice(0, 3), rest.slice(3)];
      // One refused address splits the batch; three outages in a row leave the rest of the page pending.
      fake.rejectAddress(refused.email);
      for (const m of down) fake.failAddress(m.email);
      const queued = await queuedRun(audience);
      await expect(dispatcher.run(queued.id)).rejects.toBeInstanceOf(DispatchInterrupted);
      expect(await statuses(queued.id, members)).toEqual([
        'failed',
        'sent',
        ...down.map(() => 'failed'),
        ...untried.map(() => 'pending'),
      ]);

      // Two members never tried: one unsubscribes, one is suppressed; the provider is back.
      const [withdrawn, suppressed] = [untried[0], untried[2]];
      await unsubscribe(withdrawn);
      await bounce(suppressed);
      for (const m of down) fake.restoreAddress(m.email);
      const sentBefore = fake.requests.length;
      expect(await dispatcher.run(queued.id)).toMatchObject({
        status: 'done',
        counts: { sent: 3, failed: 4, skipped: 2 },
      });
      expect(fake.requests.slice(sentBefore).map((r) => `${r.path} ${r.status}`)).toEqual(
        Array.from({ length: 2 }, () => '/emails 200'),
      );
      expect(fake.deliveredTo(withdrawn.email)).toHaveLength(0);
      expect(fake.deliveredTo(suppressed.email)).toHaveLength(0);
      for (const m of [before, untried[1], untried[3]]) expect(fake.deliveredTo(m.email)).toHaveLength(1);
      expect(await statuses(queued.id, [withdrawn, suppressed])).toEqual(['skipped', 'skipped']);
      expect((await recorded(queued.id, [withdrawn, suppressed])).map((r) => r[1])).toEqual([
        'no_consent',
        'suppressed',
      ]);
    });

    it('fails single sends that spent their budget on an outage, leaves the rest of the page pending, and sends it on the next attempt', async () => {
      const { createdAt, audience } = day(4);
      const members = await createAudience(api.prisma, 'outage', 8, { consent: true, createdAt });
      const [refused, before, ...rest] = members;
      const [down, untried] = [rest.slice(0, 3), rest.slice(3)];
      // One refused address splits the batch; then the provider fails three messages in a row.
      fake.rejectAddress(refused.email);
      for (const m of down) fake.failAddress(m.email);
      const queued = await queuedRun(audience);

      await expect(dispatcher.run(queued.id)).rejects.toBeInstanceOf(DispatchInterrupted);
      // Each message of the outage made its 1 + EMAIL_SEND_RETRIES requests and failed; three in a row mean
      // the provider is down, and the messages not yet tried wait for the next attempt.
      expect(await statuses(queued.id, members)).toEqual([
        'failed',
        'sent',
        'failed',
        'failed',
        'failed',
        'pending',
        'pending',
        'pending',
      ]);
      const interrupted = await run(queued.id);
      expect(interrupted).toMatchObject({ status: 'running', sentCount: 1, failedCount: 4 });
      const tries = (m: User) =>
        fake.requests.filter((r) => r.path === '/emails' && (r.body as { to: string[] }).to[0] === m.email);
      for (const m of down) expect(tries(m).map((r) => r.status)).toEqual([503, 503, 503, 503]);
      const rows = await api.prisma.broadcastRecipient.findMany({
        where: { runId: queued.id, userId: { in: down.map((m) => m.id) } },
      });
      for (const row of rows) expect(row.error).toMatch(/provider answered 503.*after 4 provider requests/);

      // The provider is back: the next attempt sends the pending ones, each once; the failed stay failed
      // (their budget is spent: no fifth request).
      for (const m of down) fake.restoreAddress(m.email);
      const sentBefore = fake.requests.length;
      expect(await dispatcher.run(queued.id)).toMatchObject({
        status: 'done',
        counts: { sent: 4, failed: 4, skipped: 0 },
      });
      expect(fake.requests.slice(sentBefore).map((r) => `${r.path} ${r.status}`)).toEqual(
        Array.from({ length: 3 }, () => '/emails 200'),
      );
      for (const m of down) expect(tries(m)).toHaveLength(4);
      for (const m of [refused, ...down]) expect(fake.deliveredTo(m.email)).toHaveLength(0);
      for (const m of [before, ...untried]) expect(fake.deliveredTo(m.email)).toHaveLength(1);
      expect(await statuses(queued.id, members)).toEqual([
        'failed',
        'sent',
        ...down.map(() => 'failed'),
        ...untried.map(() => 'sent'),
      ]);
    });
  });
});
