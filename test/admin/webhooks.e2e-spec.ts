import { createUser } from '../factories/user.factory.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { checkoutToken, deliver, grants, newSubId, subscriptionEvent } from '../support/billing.js';
import { deliverIdentity, identityUserEvent, signIdentityEvent } from '../support/identity-webhook.js';
import { expectUnreadableInstant, ISO_FORMS_DATE_CANNOT_READ } from '../support/instants.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { settled } from '../support/webhooks.js';

/** Issue 17 item 3: operators inspect and replay webhook deliveries (DESIGN.md 5c "webhook archive"). */
describe('admin webhook archive: list, inspect, replay', () => {
  let env: TestEnv;
  let api: ApiApp;
  let admin: string;

  beforeAll(async () => {
    env = await TestEnv.create({ env: { BILLING_PRICE_TIERS: 'pri_pro:PRO,pri_team:TEAM' } });
    api = await env.startApi();
    await env.startWorker();
    admin = await api.bearer('user_webhook_admin', 'admin@example.com');
  });
  afterAll(() => env.close());

  const get = (path: string, auth = admin) =>
    api.http.get(`/api/v1/admin/webhooks${path}`).set('Authorization', auth);
  const post = (path: string, body?: object, auth = admin) =>
    api.http
      .post(`/api/v1/admin/webhooks${path}`)
      .set('Authorization', auth)
      .send(body ?? {});

  /** A subscription.created whose price is not configured yet: accepted, then FAILED by the worker. */
  async function failedCreated() {
    const user = await createUser(api.prisma);
    const subId = newSubId();
    const event = subscriptionEvent({
      type: 'subscription.created',
      subId,
      priceId: 'pri_later',
      token: checkoutToken(api, user),
    });
    expect((await deliver(api, event)).outcome).toBe('failed');
    const row = await api.prisma.webhookEvent.findUniqueOrThrow({
      where: { provider_eventId: { provider: 'billing', eventId: event.event_id } },
    });
    return { user, subId, event, row };
  }

  it('lists deliveries newest first with filters, and shows one with its payload (identity without names)', async () => {
    const identity = signIdentityEvent(
      identityUserEvent('user.created', 'user_listed', 'listed@example.com'),
    );
    expect((await deliverIdentity(api, identity)).outcome).toBe('processed');
    const { event } = await failedCreated();

    const all = await get('');
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ page: 1, page_size: 50 });
    expect(all.body.total).toBeGreaterThanOrEqual(2);
    const times = all.body.items.map((i: { received_at: string }) => i.received_at);
    expect(times).toEqual([...times].sort().reverse());

    const failed = await get('?provider=billing&status=FAILED&event_type=subscription.created');
    const mine = failed.body.items.find((i: { event_id: string }) => i.event_id === event.event_id);
    expect(mine).toMatchObject({
      provider: 'billing',
      event_type: 'subscription.created',
      status: 'FAILED',
      attempts: 3,
      error: expect.stringContaining('pri_later'),
      processed_at: null,
    });
    expect(mine).not.toHaveProperty('payload');
    expect(failed.body.items.every((i: { status: string }) => i.status === 'FAILED')).toBe(true);

    const identityRow = (await get('?provider=identity')).body.items[0];
    const detail = await get(`/${identityRow.id}`);
    expect(detail.status).toBe(200);
    expect(detail.body.payload).toMatchObject({ type: 'user.created', data: { id: 'user_listed' } });
    expect(JSON.stringify(detail.body.payload)).not.toMatch(/first_name|last_name|phone/);

    expect((await get('?status=NOPE')).status).toBe(400);
    expect((await get('?page_size=101')).status).toBe(400);
    expect((await get('?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z')).status).toBe(400);
    expect((await get(`/6f1c1f0e-8a53-4c9b-9d1e-3b5c2a7e4d10`)).status).toBe(404);
  });

  it('refuses ISO 8601 times that Date cannot read in the list and bulk replay filters with 400', async () => {
    for (const at of ISO_FORMS_DATE_CANNOT_READ) {
      expectUnreadableInstant(await get(`?to=${encodeURIComponent(at)}`), 'to');
      expectUnreadableInstant(await post('/replay', { status: 'FAILED', from: at }), 'from');
    }
  });

  it('replays a FAILED event once its cause is fixed: processed once, audited; a PROCESSED one is 409', async () => {
    const { user, subId, row } = await failedCreated();
    api.config.project.priceTiers.pri_later = 'PRO';
    try {
      const res = await post(`/${row.id}/replay`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ id: row.id, status: 'PROCESSED', outcome: 'processed' });
    } finally {
      delete api.config.project.priceTiers.pri_later;
    }
    expect((await grants(api, user.id)).map((g) => g.jobId)).toEqual([`first-period:${subId}`]);
    const again = await post(`/${row.id}/replay`);
    expect(again.status).toBe(409);
    expect(again.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(again.body).toMatchObject({ code: 'already_processed' });
    const audits = await api.prisma.auditLog.findMany({
      where: { action: 'webhook.replayed', resourceId: row.eventId },
    });
    expect(audits).toHaveLength(1);
    expect(audits[0]).toMatchObject({ actor: 'user:user_webhook_admin' });
    expect(audits[0].details).toMatchObject({ previous_status: 'FAILED', provider: 'billing' });
  });

  it('refuses to replay an event the worker still holds (RECEIVED) with 409 still_processing, changing nothing', async () => {
    const { row } = await failedCreated();
    // Between two retries the row is RECEIVED again (its next attempt scheduled in the queue).
    await api.prisma.webhookEvent.update({ where: { id: row.id }, data: { status: 'RECEIVED' } });
    const before = await api.prisma.webhookEvent.findUniqueOrThrow({ where: { id: row.id } });
    const res = await post(`/${row.id}/replay`);
    expect(res.status).toBe(409);
    expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(res.body).toMatchObject({ code: 'still_processing' });
    expect(await api.prisma.webhookEvent.findUniqueOrThrow({ where: { id: row.id } })).toEqual(before);
    expect(
      await api.prisma.auditLog.count({ where: { action: 'webhook.replayed', resourceId: row.eventId } }),
    ).toBe(0);
  });

  it('20 concurrent replays of one FAILED event give one effect', async () => {
    const { user, row } = await failedCreated();
    api.config.project.priceTiers.pri_later = 'PRO';
    try {
      const results = await Promise.all(Array.from({ length: 20 }, () => post(`/${row.id}/replay`)));
      for (const res of results) expect([200, 409]).toContain(res.status);
      const outcomes = results.filter((r) => r.status === 200).map((r) => r.body.outcome);
      expect(outcomes.filter((o) => o === 'processed')).toHaveLength(1);
    } finally {
      delete api.config.project.priceTiers.pri_later;
    }
    expect((await grants(api, user.id)).map((g) => g.delta)).toEqual([1000]);
    expect(await api.prisma.subscription.count({ where: { userId: user.id } })).toBe(1);
  });

  it('bulk replay queues every FAILED event of a provider for the worker (202) and each is applied once', async () => {
    const first = await failedCreated();
    const second = await failedCreated();
    api.config.project.priceTiers.pri_later = 'PRO';
    try {
      const res = await post('/replay', { status: 'FAILED', provider: 'billing' });
      expect(res.status).toBe(202);
      expect(res.body.queued).toBeGreaterThanOrEqual(2);
      await settled(api, 'billing', first.event.event_id);
      await settled(api, 'billing', second.event.event_id);
      for (const { user } of [first, second]) {
        expect((await grants(api, user.id)).map((g) => g.delta)).toEqual([1000]);
      }
    } finally {
      delete api.config.project.priceTiers.pri_later;
    }
    expect((await post('/replay', { status: 'PROCESSED' })).status).toBe(400);
  });

  it('refuses non-admins with 403 admin_required and an admin.unauthorized entry', async () => {
    const someone = await api.bearer('user_not_admin', 'someone@example.com');
    const before = await api.prisma.auditLog.count({ where: { action: 'admin.unauthorized' } });
    for (const res of [await get('', someone), await post('/replay', { status: 'FAILED' }, someone)]) {
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ code: 'admin_required' });
    }
    expect(await api.prisma.auditLog.count({ where: { action: 'admin.unauthorized' } })).toBeGreaterThan(
      before,
    );
  });
});
