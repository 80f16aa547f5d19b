import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MetricsService } from '../../src/infra/metrics/metrics.service.js';
import { WebhookInboxService } from '../../src/modules/webhooks/webhook-inbox.service.js';
import { checkoutCreated, send } from '../support/billing.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

/**
 * Issue 15 item 3: concurrent webhook jobs are applied in one transaction per batch. When one event of a
 * batch fails, the batch rolls back and each of its events is applied again alone, so only the failing one
 * fails. Driven through the real intake (no worker runs here, so the accepted rows wait as RECEIVED) and the
 * real WebhookInboxService.apply, called by concurrent jobs.
 */
describe('billing webhooks: batched apply', () => {
  let env: TestEnv;
  let api: ApiApp;
  let inbox: WebhookInboxService;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    inbox = api.app.get(WebhookInboxService);
  });
  afterAll(() => env.close());

  /** A signed subscription.created for a fresh user, accepted at intake; its archive row id. */
  async function accepted() {
    const { user, created: event } = await checkoutCreated(api);
    const res = await send(api, event);
    expect(res.body).toEqual({ received: true, status: 'accepted' });
    const row = await api.prisma.webhookEvent.findUniqueOrThrow({
      where: { provider_eventId: { provider: 'billing', eventId: event.event_id } },
    });
    return { id: row.id, user, subId: event.data.id };
  }

  it('applies concurrent events in shared transactions, each exactly once, and a failing one alone', async () => {
    const good = [];
    for (let i = 0; i < 40; i++) good.push(await accepted());
    const bad = await accepted();
    // A fault injected in the database: the last statement of the bad event's handler (its audit entry,
    // written after the subscription, the grant and the tier) fails, so its batch rolls back and its
    // earlier writes must be gone, while every other event of that batch is applied after all.
    await api.prisma.$executeRawUnsafe(`
      CREATE FUNCTION inject_fault() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.details->>'subscription_id' = '${bad.subId}' THEN RAISE EXCEPTION 'injected fault'; END IF;
        RETURN NEW;
      END $$`);
    await api.prisma.$executeRawUnsafe(
      'CREATE TRIGGER inject_fault BEFORE INSERT ON audit_logs FOR EACH ROW EXECUTE FUNCTION inject_fault()',
    );
    // Which transaction wrote each outcome.
    await api.prisma.$executeRawUnsafe('CREATE TABLE applied_in (id uuid, xid bigint)');
    await api.prisma.$executeRawUnsafe(`
      CREATE FUNCTION record_xid() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO applied_in VALUES (NEW.id, txid_current()); RETURN NEW; END $$`);
    await api.prisma.$executeRawUnsafe(`
      CREATE TRIGGER record_xid AFTER UPDATE OF status ON webhook_events
      FOR EACH ROW WHEN (NEW.status = 'PROCESSED') EXECUTE FUNCTION record_xid()`);
    // Two waves of concurrent jobs. The first 20 share a batch that commits, with the same id twice in it
    // (a stalled job run again while its first run waits in the batch): applied once, the second answered as
    // a duplicate. The second wave's batch holds the bad one, rolls back, and its events run again alone;
    // it starts when the first is done, whatever the gather window.
    const all = [...good.slice(0, 20), bad, ...good.slice(20)];
    const first = await Promise.allSettled(
      [...good.slice(0, 20), good[0]].map(({ id }) => inbox.apply(id, false)),
    );
    const second = await Promise.allSettled([bad, ...good.slice(20)].map(({ id }) => inbox.apply(id, false)));
    const outcomes = [...first, ...second].map((r) => (r.status === 'fulfilled' ? r.value.outcome : 'threw'));
    expect(outcomes.filter((o) => o === 'processed')).toHaveLength(good.length);
    expect(outcomes[20]).toBe('duplicate');
    expect(outcomes[21]).toBe('threw');

    const rows = await api.prisma.$queryRaw<{ id: string; status: string; attempts: number }[]>`
      SELECT id, status::text AS status, attempts FROM webhook_events
      WHERE id = ANY(${all.map((a) => a.id)}::uuid[])`;
    const byId = new Map(rows.map((row) => [row.id, row]));
    for (const { id } of good) expect(byId.get(id)).toMatchObject({ status: 'PROCESSED', attempts: 1 });
    expect(byId.get(bad.id)).toMatchObject({ status: 'RECEIVED', attempts: 1 });
    // Some events shared one transaction: fewer transactions than events, and one with several.
    const xids = await api.prisma.$queryRaw<{ xid: string; events: number }[]>`
      SELECT xid::text AS xid, count(*)::int AS events FROM applied_in GROUP BY xid`;
    expect(xids.reduce((sum, row) => sum + row.events, 0)).toBe(good.length);
    expect(xids.length).toBeLessThan(good.length);
    expect(Math.max(...xids.map((row) => row.events))).toBeGreaterThan(1);

    // Every good event's effects exactly once; none of the failed one's (its transactions rolled back).
    for (const { user, subId } of good) {
      expect(await api.prisma.subscription.count({ where: { providerSubscriptionId: subId } })).toBe(1);
      expect((await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).currentTier).toBe('PRO');
      expect(
        await api.prisma.auditLog.count({
          where: { action: 'subscription.created', userId: user.identityUserId },
        }),
      ).toBe(1);
    }
    expect(await api.prisma.subscription.count({ where: { providerSubscriptionId: bad.subId } })).toBe(0);
    expect(await api.prisma.creditTransaction.count({ where: { userId: bad.user.id } })).toBe(0);
    expect((await api.prisma.user.findUniqueOrThrow({ where: { id: bad.user.id } })).currentTier).toBe(
      'FREE',
    );

    // Its last attempt records it FAILED, alone.
    expect(await inbox.apply(bad.id, true)).toEqual({ outcome: 'failed' });
    expect(await api.prisma.webhookEvent.findUniqueOrThrow({ where: { id: bad.id } })).toMatchObject({
      status: 'FAILED',
      attempts: 2,
    });

    // A second run of every job finds the events done.
    const again = await Promise.all(good.map(({ id }) => inbox.apply(id, false)));
    expect(again.map((r) => r.outcome)).toEqual(good.map(() => 'duplicate'));
  });

  it('fails an event that can never apply at once, refused with its reason, and applies the rest', async () => {
    const metrics = api.app.get(MetricsService);
    const refusals = async () =>
      (await metrics.webhookRefusals.get()).values.find(
        (v) => v.labels.provider === 'billing' && v.labels.reason === 'invalid_payload',
      )?.value ?? 0;
    const good = [];
    for (let i = 0; i < 8; i++) good.push(await accepted());
    const broken = await accepted();
    // Stored before a stricter contract (or edited by hand): its data no longer parses in the worker.
    await api.prisma.$executeRaw`
      UPDATE webhook_events SET payload = jsonb_set(payload, '{data,items}', '[]'::jsonb)
      WHERE id = ${broken.id}::uuid`;
    const before = await refusals();

    const results = await Promise.all([...good, broken].map(({ id }) => inbox.apply(id, false)));

    expect(results.map((r) => r.outcome)).toEqual([...good.map(() => 'processed'), 'failed']);
    expect(await refusals()).toBe(before + 1);
    expect(await api.prisma.webhookEvent.findUniqueOrThrow({ where: { id: broken.id } })).toMatchObject({
      status: 'FAILED',
      attempts: 1,
    });
  });
});
