import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { WebhookInboxRepository } from '../../src/modules/webhooks/webhook-inbox.repository.js';
import {
  checkoutToken,
  createUser,
  deliver,
  grants,
  newEventId,
  newSubId,
  subscribe,
  subscriptionEvent,
} from '../support/billing.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

describe('billing webhooks under concurrency and failure', () => {
  let env: TestEnv;
  let api: ApiApp;
  let locker: pg.Client;

  beforeAll(async () => {
    // An explicit price map: the failure test extends it at run time like a config fix would.
    env = await TestEnv.create({
      env: { BILLING_PRICE_TIERS: 'pri_pro:PRO,pri_team:TEAM', DATABASE_POOL_SIZE: '12' },
    });
    api = await env.startApi();
    locker = new pg.Client({ connectionString: env.db.url });
    await locker.connect();
    env.onClose(() => locker.end());
  });
  afterAll(() => env.close());

  /** One checkout's created and activated events, sharing occurred_at as the provider often sends them. */
  async function checkoutPair(options: { createdStatus: 'active' | 'trialing'; activatedToken: boolean }) {
    const user = await createUser(api);
    const subId = newSubId();
    const token = checkoutToken(api, user);
    const occurredAt = new Date(Date.now() - 1000);
    const created = subscriptionEvent({
      type: 'subscription.created',
      subId,
      status: options.createdStatus,
      token,
      occurredAt,
    });
    const activated = subscriptionEvent({
      type: 'subscription.activated',
      subId,
      status: 'active',
      token: options.activatedToken ? token : null,
      customerId: options.activatedToken ? `ctm_${subId}` : null,
      occurredAt,
    });
    return { user, subId, created, activated };
  }

  /** The same end state whatever the order: one row, ACTIVE, one grant keyed on the created event. */
  async function expectConverged(pair: Awaited<ReturnType<typeof checkoutPair>>) {
    const rows = await api.prisma.subscription.findMany({ where: { providerSubscriptionId: pair.subId } });
    expect(rows).toHaveLength(1);
    const [row] = rows;
    // Equal occurred_at: the later lifecycle status wins, then the higher event id.
    const expectedLast =
      pair.created.data.status === 'active' && pair.created.event_id > pair.activated.event_id
        ? pair.created.event_id
        : pair.activated.event_id;
    expect(row).toMatchObject({
      userId: pair.user.id,
      status: 'ACTIVE',
      tier: 'PRO',
      lastEventId: expectedLast,
    });
    const ledger = await grants(api, pair.user.id);
    expect(ledger.map((g) => [g.jobId, g.delta])).toEqual([[`first-period:${pair.subId}`, 1000]]);
    const user = await api.prisma.user.findUniqueOrThrow({ where: { id: pair.user.id } });
    expect(user).toMatchObject({ currentTier: 'PRO', creditBalance: 1000 });
    expect(await api.prisma.outboxEntry.count({ where: { jobId: `subscription-welcome-${row.id}` } })).toBe(
      1,
    );
    const archive = await api.prisma.webhookEvent.findMany({
      where: { eventId: { in: [pair.created.event_id, pair.activated.event_id] } },
    });
    expect(archive).toHaveLength(2);
    for (const entry of archive) expect(['PROCESSED', 'SKIPPED']).toContain(entry.status);
    expect(
      archive.filter((entry) => entry.status === 'SKIPPED').every((entry) => entry.error === 'stale_event'),
    ).toBe(true);
  }

  // Promise.all does not decide which request reaches the database first: this is a race, 24 times, with
  // the send order alternated. The test below forces each interleaving deterministically.
  it('created and activated delivered concurrently (arrival order left to the race), 24 rounds, converge with one grant', async () => {
    const round = async (n: number) => {
      const pair = await checkoutPair({
        createdStatus: n % 4 < 2 ? 'active' : 'trialing',
        activatedToken: n % 3 !== 0,
      });
      const send = n % 2 === 0 ? [pair.created, pair.activated] : [pair.activated, pair.created];
      const results = await Promise.all(send.map((event) => deliver(api, event)));
      expect(results.map((r) => r.status)).toEqual([200, 200]);
      await expectConverged(pair);
    };
    // Four independent rounds at a time: more contention on the pool and the user locks, less wall time.
    for (let batch = 0; batch < 24; batch += 4) {
      await Promise.all([0, 1, 2, 3].map((i) => round(batch + i)));
    }
  });

  /** Holds the subscription's lock in the test so both requests queue behind it in a chosen order. */
  async function forcedOrder(first: object, second: object, subId: string) {
    const key = `billing-subscription:${subId}`;
    const waiting = async () =>
      Number(
        (
          await locker.query(
            `SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
               AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
          )
        ).rows[0].n,
      );
    await locker.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [key]);
    try {
      const a = deliver(api, first).then((r) => r);
      await waitFor(async () => (await waiting()) === 1);
      const b = deliver(api, second).then((r) => r);
      await waitFor(async () => (await waiting()) === 2);
      await locker.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [key]);
      const results = await Promise.all([a, b]);
      expect(results.map((r) => r.status)).toEqual([200, 200]);
    } finally {
      await locker.query('SELECT pg_advisory_unlock_all()');
    }
  }

  it('forces both interleavings while both transactions are open: activated first is parked and replayed', async () => {
    for (let round = 0; round < 8; round += 1) {
      const pair = await checkoutPair({ createdStatus: 'trialing', activatedToken: false });
      const activatedFirst = round % 2 === 0;
      if (activatedFirst) await forcedOrder(pair.activated, pair.created, pair.subId);
      else await forcedOrder(pair.created, pair.activated, pair.subId);
      await expectConverged(pair);
      const parkedReplays = await api.prisma.auditLog.count({
        where: {
          action: 'subscription.activated',
          details: { path: ['reason'], equals: 'replayed_after_park' },
          resourceId: (
            await api.prisma.subscription.findUniqueOrThrow({ where: { providerSubscriptionId: pair.subId } })
          ).id,
        },
      });
      expect(parkedReplays).toBe(activatedFirst ? 1 : 0);
    }
  });

  it('a 30-way concurrent redelivery storm of one created event grants once', async () => {
    const user = await createUser(api);
    const subId = newSubId();
    const created = subscriptionEvent({
      type: 'subscription.created',
      subId,
      token: checkoutToken(api, user),
    });
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => deliver(api, { ...created, notification_id: `ntf_storm_${i}` })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(30).fill(200));
    const statuses = results.map((r) => (r.body as { status: string }).status).sort();
    expect(statuses.filter((s) => s === 'processed')).toHaveLength(1);
    expect(statuses.filter((s) => s === 'duplicate')).toHaveLength(29);
    expect((await grants(api, user.id)).map((g) => g.delta)).toEqual([1000]);
    expect((await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).creditBalance).toBe(1000);
    expect(await api.prisma.subscription.count({ where: { providerSubscriptionId: subId } })).toBe(1);
    expect(
      await api.prisma.auditLog.count({
        where: { action: 'subscription.created', details: { path: ['event_id'], equals: created.event_id } },
      }),
    ).toBe(1);
    expect(await api.prisma.webhookEvent.findFirst({ where: { eventId: created.event_id } })).toMatchObject({
      status: 'PROCESSED',
      attempts: 1,
    });
  });

  it('a handler that fails mid-way rolls everything back, records the failure, and the redelivery is processed once', async () => {
    const user = await createUser(api);
    const subId = newSubId();
    const created = subscriptionEvent({
      type: 'subscription.created',
      subId,
      token: checkoutToken(api, user),
      eventId: newEventId(),
    });
    // The ledger insert fails after the subscription row was written in the same transaction.
    await locker.query(`
      CREATE FUNCTION fail_grant() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'injected ledger failure'; END $$;
      CREATE TRIGGER fail_grant BEFORE INSERT ON credit_transactions
        FOR EACH ROW WHEN (NEW.job_id = 'first-period:${subId}') EXECUTE FUNCTION fail_grant();`);

    const failed = await deliver(api, created);
    expect(failed.status).toBe(500);
    expect(failed.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(failed.body).toMatchObject({ status: 500, code: 'webhook_processing_failed' });
    expect(JSON.stringify(failed.body)).not.toMatch(/injected|credit_transactions/);
    expect(await api.prisma.subscription.count({ where: { providerSubscriptionId: subId } })).toBe(0);
    expect(await api.prisma.processedWebhookEvent.count({ where: { eventId: created.event_id } })).toBe(0);
    expect(
      await api.prisma.outboxEntry.count({
        where: { jobName: 'send-email', payload: { path: ['userId'], equals: user.id } },
      }),
    ).toBe(0);
    expect((await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).currentTier).toBe('FREE');
    expect(await api.prisma.webhookEvent.findFirst({ where: { eventId: created.event_id } })).toMatchObject({
      status: 'FAILED',
    });
    const failure = await api.prisma.auditLog.findFirstOrThrow({
      where: { action: 'webhook.failed', resourceId: created.event_id },
    });
    expect(failure.details).toMatchObject({ provider: 'billing', event_type: 'subscription.created' });

    await locker.query('DROP TRIGGER fail_grant ON credit_transactions; DROP FUNCTION fail_grant();');
    const retried = await Promise.all([deliver(api, created), deliver(api, created)]);
    expect(retried.map((r) => (r.body as { status: string }).status).sort()).toEqual([
      'duplicate',
      'processed',
    ]);
    expect((await grants(api, user.id)).map((g) => g.jobId)).toEqual([`first-period:${subId}`]);
    expect(await api.prisma.webhookEvent.findFirst({ where: { eventId: created.event_id } })).toMatchObject({
      status: 'PROCESSED',
      attempts: 2,
      error: null,
    });
    expect((await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).currentTier).toBe('PRO');
  });

  it('a failed attempt whose failure record lands after a concurrent delivery succeeded does not overwrite it', async () => {
    const user = await createUser(api);
    const holdSubId = newSubId();
    const created = subscriptionEvent({
      type: 'subscription.created',
      subId: holdSubId,
      priceId: 'pri_late_price',
      token: checkoutToken(api, user),
    });
    // Delivery A fails (unknown price) and rolls back; its failure record is then held in a trigger on
    // the archive, before it touches any row, until delivery B has processed and committed the event.
    const HOLD = 731_001;
    await locker.query(`
      CREATE FUNCTION hold_failure_record() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM pg_advisory_xact_lock(${HOLD}); RETURN NEW; END $$;
      CREATE TRIGGER hold_failure_record BEFORE INSERT OR UPDATE ON webhook_events
        FOR EACH ROW WHEN (NEW.status = 'FAILED' AND NEW.event_id = '${created.event_id}')
        EXECUTE FUNCTION hold_failure_record();`);
    await locker.query('SELECT pg_advisory_lock($1)', [HOLD]);
    try {
      const a = deliver(api, created).then((r) => r);
      await waitFor(async () => {
        const { rows } = await locker.query(
          `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = $1`,
          [HOLD],
        );
        return rows[0].n === 1;
      });
      api.config.project.priceTiers.pri_late_price = 'PRO';
      const b = await deliver(api, created);
      expect(b.body).toEqual({ received: true, status: 'processed' });
      await locker.query('SELECT pg_advisory_unlock($1)', [HOLD]);
      expect((await a).status).toBe(500);
    } finally {
      delete api.config.project.priceTiers.pri_late_price;
      await locker.query('SELECT pg_advisory_unlock_all()');
      await locker.query(
        'DROP TRIGGER hold_failure_record ON webhook_events; DROP FUNCTION hold_failure_record();',
      );
    }
    const archivedRow = await api.prisma.webhookEvent.findFirstOrThrow({
      where: { eventId: created.event_id },
    });
    expect(archivedRow).toMatchObject({ status: 'PROCESSED', error: null, attempts: 1 });
    expect(archivedRow.processedAt).not.toBeNull();
    // The event was not lost, so nothing asks an operator to act.
    expect(
      await api.prisma.auditLog.count({ where: { action: 'webhook.failed', resourceId: created.event_id } }),
    ).toBe(0);
    expect((await grants(api, user.id)).map((g) => g.jobId)).toEqual([`first-period:${holdSubId}`]);
    expect((await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).currentTier).toBe('PRO');
  });

  it('a failure record never resurrects the archive of an event already handled (archive pruned, claim kept)', async () => {
    const inbox = api.app.get(WebhookInboxRepository);
    const { created } = await subscribe(api);
    const event = {
      eventId: created.event_id,
      eventType: created.event_type,
      occurredAt: new Date(created.occurred_at),
      payload: created,
    };
    expect(await inbox.archiveFailure(api.prisma, 'billing', event, 'late failure')).toBe(false);
    await api.prisma.webhookEvent.deleteMany({ where: { eventId: created.event_id } });
    expect(await inbox.archiveFailure(api.prisma, 'billing', event, 'late failure')).toBe(false);
    expect(await api.prisma.webhookEvent.count({ where: { eventId: created.event_id } })).toBe(0);
    // An event nobody handled is recorded, and a second failure counts as another attempt.
    const fresh = { ...event, eventId: newEventId() };
    expect(await inbox.archiveFailure(api.prisma, 'billing', fresh, 'first')).toBe(true);
    expect(await inbox.archiveFailure(api.prisma, 'billing', fresh, 'second')).toBe(true);
    expect(
      await api.prisma.webhookEvent.findFirstOrThrow({ where: { eventId: fresh.eventId } }),
    ).toMatchObject({
      status: 'FAILED',
      error: 'second',
      attempts: 2,
      processedAt: null,
    });
  });

  it('an unconfigured price fails with 500 until the price is configured, then the retry succeeds', async () => {
    const user = await createUser(api);
    const subId = newSubId();
    const created = subscriptionEvent({
      type: 'subscription.created',
      subId,
      priceId: 'pri_new_team',
      token: checkoutToken(api, user, 'TEAM'),
    });
    const failed = await deliver(api, created);
    expect(failed.status).toBe(500);
    expect(await api.prisma.webhookEvent.findFirst({ where: { eventId: created.event_id } })).toMatchObject({
      status: 'FAILED',
      error: expect.stringContaining('pri_new_team'),
    });
    api.config.project.priceTiers.pri_new_team = 'TEAM';
    try {
      expect((await deliver(api, created)).body).toEqual({ received: true, status: 'processed' });
    } finally {
      delete api.config.project.priceTiers.pri_new_team;
    }
    expect(
      await api.prisma.subscription.findUniqueOrThrow({ where: { providerSubscriptionId: subId } }),
    ).toMatchObject({ tier: 'TEAM', priceId: 'pri_new_team' });
    expect((await grants(api, user.id)).map((g) => g.delta)).toEqual([5000]);
    // Retired from the configuration later: grandfathered subscribers keep their stored tier.
    const paused = await deliver(
      api,
      subscriptionEvent({
        type: 'subscription.paused',
        subId,
        status: 'paused',
        priceId: 'pri_new_team',
        periodEnd: null,
      }),
    );
    expect(paused.status).toBe(200);
    expect(
      await api.prisma.subscription.findUniqueOrThrow({ where: { providerSubscriptionId: subId } }),
    ).toMatchObject({ status: 'PAUSED', tier: 'TEAM' });
  });
});
