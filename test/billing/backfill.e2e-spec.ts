import { createUser } from '../factories/user.factory.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { BillingBackfillService } from '../../src/modules/billing/jobs/billing-backfill.service.js';
import type { FakeBillingApi } from '../fakes/billing-api.js';
import {
  billingApiWorld,
  checkoutToken,
  DAY,
  deliver,
  grants,
  newSubId,
  PRICE,
  subscriptionEvent,
  transactionEvent,
} from '../support/billing.js';
import type { ApiApp, TestEnv } from '../support/test-env.js';
import { settled } from '../support/webhooks.js';

type LoggedEvent = { event_id: string; event_type: string; occurred_at: string; data: unknown };

/**
 * Issue 17 item 1: deliveries lost on purpose. The fake provider's event log (`GET /events`) holds every
 * event; only some were POSTed. One backfill run brings every user to the right tier and balance, exactly
 * once; a second run changes nothing; a provider outage stops a run without harm and the next one resumes.
 */
describe('billing backfill from the provider event log', () => {
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;
  let billing: FakeBillingApi;

  beforeAll(async () => {
    ({ env, api, worker, billing } = await billingApiWorld());
  });
  afterAll(() => env.close());

  /** The provider logs every event; `delivered` ones are also POSTed (and applied) now. */
  async function happened(event: LoggedEvent & { notification_id?: string }, delivered: boolean) {
    const { notification_id: _ignored, ...logged } = event;
    billing.events.push(logged);
    if (delivered) expect((await deliver(api, event)).outcome).toBe('processed');
  }
  const user = async (id: string) => api.prisma.user.findUniqueOrThrow({ where: { id } });
  const backfill = () => worker.get(BillingBackfillService).run(new Date(), { force: true });

  it('feeds every missed event once; a second run changes nothing', async () => {
    const t0 = new Date(Date.now() - 40 * DAY);
    // A: a purchase whose webhooks never arrived at all.
    const a = await createUser(api.prisma);
    const subA = newSubId();
    const tokenA = checkoutToken(api, a, 'PRO', t0);
    await happened(
      subscriptionEvent({ type: 'subscription.created', subId: subA, token: tokenA, occurredAt: t0 }),
      false,
    );
    await happened(transactionEvent({ subId: subA, origin: 'web', token: tokenA, occurredAt: t0 }), false);
    // B: created delivered; the renewal (next period and its payment) never came.
    const b = await createUser(api.prisma);
    const subB = newSubId();
    const renewAt = new Date(t0.getTime() + 30 * DAY);
    await happened(
      subscriptionEvent({
        type: 'subscription.created',
        subId: subB,
        priceId: PRICE.TEAM,
        token: checkoutToken(api, b, 'TEAM', t0),
        occurredAt: t0,
        periodStart: t0,
        periodEnd: renewAt,
      }),
      true,
    );
    await happened(
      subscriptionEvent({
        type: 'subscription.updated',
        subId: subB,
        priceId: PRICE.TEAM,
        occurredAt: renewAt,
        periodStart: renewAt,
        periodEnd: new Date(renewAt.getTime() + 30 * DAY),
      }),
      false,
    );
    await happened(transactionEvent({ subId: subB, priceId: PRICE.TEAM, occurredAt: renewAt }), false);
    // C: created delivered; the cancellation (access already over) never came.
    const c = await createUser(api.prisma);
    const subC = newSubId();
    await happened(
      subscriptionEvent({
        type: 'subscription.created',
        subId: subC,
        token: checkoutToken(api, c, 'PRO', t0),
        occurredAt: t0,
      }),
      true,
    );
    await happened(
      subscriptionEvent({
        type: 'subscription.canceled',
        subId: subC,
        status: 'canceled',
        periodEnd: null,
        canceledAt: new Date(t0.getTime() + DAY),
        occurredAt: new Date(t0.getTime() + DAY),
      }),
      false,
    );
    // A broken event in the log: refused (archived FAILED, visible), and the run goes on past it.
    const broken = subscriptionEvent({ type: 'subscription.updated', subId: newSubId() });
    broken.data.items = [];
    billing.events.push(broken);
    expect(await user(a.id)).toMatchObject({ currentTier: 'FREE', creditBalance: 0 });
    expect((await user(c.id)).currentTier).toBe('PRO');

    const first = await backfill();
    expect(first).toMatchObject({
      ran: true,
      accepted: 5,
      duplicates: 2,
      refused: 1,
      checkpoint: broken.event_id,
    });
    for (const event of billing.events.slice(0, -1)) await settled(api, 'billing', event.event_id);

    expect(await user(a.id)).toMatchObject({ currentTier: 'PRO', creditBalance: 1000 });
    expect((await grants(api, a.id)).map((g) => g.jobId)).toEqual([`first-period:${subA}`]);
    // Effects of backfilled events are audited as the backfill's, and the archive says how they came.
    const createdAudit = await api.prisma.auditLog.findFirstOrThrow({
      where: { action: 'subscription.created', details: { path: ['subscription_id'], equals: subA } },
    });
    expect(createdAudit.actor).toBe('system:backfill');
    expect(
      await api.prisma.webhookEvent.findUniqueOrThrow({
        where: { provider_eventId: { provider: 'billing', eventId: billing.events[0].event_id } },
      }),
    ).toMatchObject({ source: 'backfill', status: 'PROCESSED' });
    expect(await user(b.id)).toMatchObject({ currentTier: 'TEAM', creditBalance: 10_000 });
    expect((await user(c.id)).currentTier).toBe('FREE');
    expect(
      await api.prisma.webhookEvent.findUniqueOrThrow({
        where: { provider_eventId: { provider: 'billing', eventId: broken.event_id } },
      }),
    ).toMatchObject({ status: 'FAILED' });
    const payments = await api.prisma.payment.findMany({
      where: { providerSubscriptionId: { in: [subA, subB] } },
    });
    expect(payments.map((p) => p.userId).sort()).toEqual([a.id, b.id].sort());

    const admin = await api.bearer('user_backfill_admin', 'admin@example.com');
    const stats = await api.http.get('/api/v1/admin/stats').set('Authorization', admin);
    expect(stats.body.webhooks.backfill).toMatchObject({
      checkpoint: broken.event_id,
      last_run_processed: 5,
    });

    const balances = async () => Promise.all([a, b, c].map(async (u) => (await user(u.id)).creditBalance));
    const before = await balances();
    expect(await backfill()).toMatchObject({ ran: true, accepted: 0, refused: 0 });
    expect(await balances()).toEqual(before);
  });

  it('stops on a provider outage with the checkpoint kept, and the next run resumes', async () => {
    const d = await createUser(api.prisma);
    const subD = newSubId();
    const checkpointBefore = (await backfill()).checkpoint;
    await happened(
      subscriptionEvent({ type: 'subscription.created', subId: subD, token: checkoutToken(api, d) }),
      false,
    );
    billing.failNext(503, Infinity);
    await expect(backfill()).rejects.toMatchObject({ code: 'billing_unavailable' });
    expect(
      (await api.prisma.syncCheckpoint.findUniqueOrThrow({ where: { name: 'billing-backfill' } })).checkpoint,
    ).toBe(checkpointBefore);
    expect((await user(d.id)).currentTier).toBe('FREE');
    billing.reset();
    expect(await backfill()).toMatchObject({ accepted: 1 });
    await settled(api, 'billing', billing.events[billing.events.length - 1].event_id);
    expect(await user(d.id)).toMatchObject({ currentTier: 'PRO', creditBalance: 1000 });
  });

  it('runs on one replica at a time: a run while another holds the backfill skips; a dead lease expires', async () => {
    const replica = await env.startWorker();
    const e = await createUser(api.prisma);
    const subE = newSubId();
    await happened(
      subscriptionEvent({ type: 'subscription.created', subId: subE, token: checkoutToken(api, e) }),
      false,
    );
    const pages = () => billing.requests.filter((r) => r.path.startsWith('/events')).length;
    const pagesBefore = pages();

    // The first run has claimed the backfill and waits for the provider's first page.
    const hold = billing.holdNextEventPage();
    const first = worker.get(BillingBackfillService).run(new Date(), { force: true });
    await hold.reached;
    // Another replica's run (forced: the interval is not what stops it) skips without asking the provider.
    expect(await replica.get(BillingBackfillService).run(new Date(), { force: true })).toMatchObject({
      ran: false,
      reason: 'running',
      accepted: 0,
    });
    hold.release();
    expect(await first).toMatchObject({ ran: true, accepted: 1 });
    expect(pages()).toBe(pagesBefore + 1);
    await settled(api, 'billing', billing.events[billing.events.length - 1].event_id);
    expect(await user(e.id)).toMatchObject({ currentTier: 'PRO', creditBalance: 1000 });
    const row = () => api.prisma.syncCheckpoint.findUniqueOrThrow({ where: { name: 'billing-backfill' } });
    expect((await row()).leaseUntil).toBeNull();

    // A run that died holding the backfill (the process crashed): its lease keeps the others off until it
    // expires, not forever.
    const crashed = (leaseUntil: Date) =>
      api.prisma.syncCheckpoint.update({ where: { name: 'billing-backfill' }, data: { leaseUntil } });
    await crashed(new Date(Date.now() + 60_000));
    expect(await replica.get(BillingBackfillService).run(new Date(), { force: true })).toMatchObject({
      ran: false,
      reason: 'running',
    });
    await crashed(new Date(Date.now() - 1000));
    expect(await replica.get(BillingBackfillService).run(new Date(), { force: true })).toMatchObject({
      ran: true,
      accepted: 0,
    });
    expect((await row()).leaseUntil).toBeNull();
  });

  it('does nothing when the provider API is not configured, or before its interval', async () => {
    const off = await env.startWorker({
      config: env.configWith({ BILLING_API_URL: '', BILLING_API_KEY: '' }),
    });
    expect(await off.get(BillingBackfillService).run(new Date(), { force: true })).toMatchObject({
      ran: false,
      reason: 'not_configured',
    });
    expect(await worker.get(BillingBackfillService).run(new Date())).toMatchObject({
      ran: false,
      reason: 'not_due',
    });
  });
});
