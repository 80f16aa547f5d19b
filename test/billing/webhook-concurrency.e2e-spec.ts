import { createUser } from '../factories/user.factory.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { WebhookInboxRepository } from '../../src/modules/webhooks/webhook-inbox.repository.js';
import { WebhookInboxService } from '../../src/modules/webhooks/webhook-inbox.service.js';
import {
  checkoutToken,
  DAY,
  deliver,
  grants,
  newEventId,
  newSubId,
  PRICE,
  subscribe,
  subscriptionEvent,
} from '../support/billing.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';
import { settled } from '../support/webhooks.js';

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
    // Accepted webhooks are applied by the worker.
    await env.startWorker();
    locker = new pg.Client({ connectionString: env.db.url });
    await locker.connect();
    env.onClose(() => locker.end());
  });
  afterAll(() => env.close());

  /** An intake group id whose job is never pushed (the repository's statements run without the service). */
  const NO_JOB = String(2n ** 32n + 1n);

  /** The receiver's intake statement alone: the event archived RECEIVED and claimed, no job pushed. */
  const intakeOnly = async (event: ReturnType<typeof subscriptionEvent>) =>
    (
      await api.app.get(WebhookInboxRepository).intake(
        [
          {
            provider: 'billing',
            event: {
              eventId: event.event_id,
              eventType: event.event_type,
              occurredAt: new Date(event.occurred_at),
              payload: event,
            },
          },
        ],
        NO_JOB,
      )
    )[0];

  /** One checkout's created and activated events, sharing occurred_at as the provider often sends them. */
  async function checkoutPair(options: { createdStatus: 'active' | 'trialing'; activatedToken: boolean }) {
    const user = await createUser(api.prisma);
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
    const user = await createUser(api.prisma);
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
    const statuses = results.map((r) => (r.body as { status: string }).status);
    expect(statuses.filter((s) => s === 'accepted')).toHaveLength(1);
    expect(statuses.filter((s) => s === 'duplicate')).toHaveLength(29);
    expect(results.filter((r) => r.outcome === 'processed')).toHaveLength(1);
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

  it('a handler that keeps failing rolls everything back each time, ends FAILED once, and the redelivery is processed once', async () => {
    const user = await createUser(api.prisma);
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

    // Accepted at once; the worker's three attempts (the test configuration) all fail.
    const failed = await deliver(api, created);
    expect(failed.status).toBe(200);
    expect(failed.body).toEqual({ received: true, status: 'accepted' });
    expect(failed.outcome).toBe('failed');
    expect(await api.prisma.subscription.count({ where: { providerSubscriptionId: subId } })).toBe(0);
    // The claim is released, so the provider's redelivery (or a replay) is accepted again.
    expect(await api.prisma.processedWebhookEvent.count({ where: { eventId: created.event_id } })).toBe(0);
    expect(
      await api.prisma.outboxEntry.count({
        where: { jobName: 'send-email', payload: { path: ['userId'], equals: user.id } },
      }),
    ).toBe(0);
    expect((await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).currentTier).toBe('FREE');
    const failedRow = await api.prisma.webhookEvent.findFirstOrThrow({
      where: { eventId: created.event_id },
    });
    expect(failedRow).toMatchObject({ status: 'FAILED', attempts: 3 });
    // No stack trace, file path or SQL in the record.
    expect(failedRow.error).not.toMatch(/\n|\/work\/|\.ts:|INSERT INTO/);
    const failures = await api.prisma.auditLog.findMany({
      where: { action: 'webhook.failed', resourceId: created.event_id },
    });
    expect(failures).toHaveLength(1);
    expect(failures[0].details).toMatchObject({ provider: 'billing', event_type: 'subscription.created' });

    await locker.query('DROP TRIGGER fail_grant ON credit_transactions; DROP FUNCTION fail_grant();');
    const retried = await Promise.all([deliver(api, created), deliver(api, created)]);
    expect(retried.map((r) => (r.body as { status: string }).status).sort()).toEqual([
      'accepted',
      'duplicate',
    ]);
    expect(retried.map((r) => r.outcome).sort()).toEqual(['duplicate', 'processed']);
    expect((await grants(api, user.id)).map((g) => g.jobId)).toEqual([`first-period:${subId}`]);
    expect(await api.prisma.webhookEvent.findFirst({ where: { eventId: created.event_id } })).toMatchObject({
      status: 'PROCESSED',
      attempts: 4,
      error: null,
    });
    expect((await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).currentTier).toBe('PRO');
  });

  it('a job pushed twice for one event (the relay re-pushing while the first runs) applies it once', async () => {
    const inbox = api.app.get(WebhookInboxService);
    const user = await createUser(api.prisma);
    const subId = newSubId();
    const created = subscriptionEvent({
      type: 'subscription.created',
      subId,
      token: checkoutToken(api, user),
    });
    // Stored by the receiver's intake statement but without a job (accept() would push one, and this suite's
    // worker could apply it before the test's jobs run): the test plays all the jobs.
    const accepted = await intakeOnly(created);
    const results = await Promise.all(Array.from({ length: 5 }, () => inbox.apply(accepted!.id, false)));
    expect(results.map((r) => r.outcome).sort()).toEqual([
      'duplicate',
      'duplicate',
      'duplicate',
      'duplicate',
      'processed',
    ]);
    expect((await grants(api, user.id)).map((g) => g.jobId)).toEqual([`first-period:${subId}`]);
    expect(
      await api.prisma.webhookEvent.findFirstOrThrow({ where: { eventId: created.event_id } }),
    ).toMatchObject({
      status: 'PROCESSED',
      attempts: 1,
    });
  });

  it('the relay gives a RECEIVED event whose push was lost a job, and it is applied once', async () => {
    const repo = api.app.get(WebhookInboxRepository);
    const user = await createUser(api.prisma);
    const subId = newSubId();
    const created = subscriptionEvent({
      type: 'subscription.created',
      subId,
      token: checkoutToken(api, user),
    });
    // The intake statement ran but the push never happened (Redis was down when it tried).
    const accepted = await intakeOnly(created);
    expect(accepted).not.toBeNull();
    await api.prisma.webhookEvent.update({
      where: { id: accepted!.id },
      data: { receivedAt: new Date(Date.now() - 60_000) },
    });
    expect(await api.app.get(WebhookInboxService).relay()).toBeGreaterThanOrEqual(1);
    await settled(api, 'billing', created.event_id);
    expect((await grants(api, user.id)).map((g) => g.jobId)).toEqual([`first-period:${subId}`]);
    expect(
      await repo.intake(
        [{ provider: 'billing', event: { eventId: created.event_id, eventType: 'x', payload: {} } }],
        NO_JOB,
      ),
    ).toEqual([null]);
  });

  it('a refused payload is archived FAILED without a claim, and never overwrites an event already accepted', async () => {
    const repo = api.app.get(WebhookInboxRepository);
    const { created } = await subscribe(api);
    const event = {
      eventId: created.event_id,
      eventType: created.event_type,
      occurredAt: new Date(created.occurred_at),
      payload: created,
    };
    expect(await repo.archiveRefused(api.prisma, 'billing', event, 'late refusal')).toBe(false);
    await api.prisma.webhookEvent.deleteMany({ where: { eventId: created.event_id } });
    // Archive pruned, claim kept: still nothing resurrected.
    expect(await repo.archiveRefused(api.prisma, 'billing', event, 'late refusal')).toBe(false);
    expect(await api.prisma.webhookEvent.count({ where: { eventId: created.event_id } })).toBe(0);
    const fresh = { ...event, eventId: newEventId() };
    expect(await repo.archiveRefused(api.prisma, 'billing', fresh, 'first')).toBe(true);
    expect(await repo.archiveRefused(api.prisma, 'billing', fresh, 'second')).toBe(true);
    expect(
      await api.prisma.webhookEvent.findFirstOrThrow({ where: { eventId: fresh.eventId } }),
    ).toMatchObject({
      status: 'FAILED',
      error: 'second',
      processedAt: null,
    });
    // The corrected delivery of a refused event is accepted: the FAILED row becomes RECEIVED.
    expect((await repo.intake([{ provider: 'billing', event: fresh }], NO_JOB))[0]).not.toBeNull();
  });

  it('one intake statement answers a batch event by event: new, claimed before, FAILED before, other provider', async () => {
    const repo = api.app.get(WebhookInboxRepository);
    const { created } = await subscribe(api);
    const refused = { eventId: newEventId(), eventType: 'subscription.updated', payload: { refused: true } };
    expect(await repo.archiveRefused(api.prisma, 'billing', refused, 'refused at intake')).toBe(true);
    const fresh = { eventId: newEventId(), eventType: 'subscription.updated', payload: { n: 1 } };
    const answers = await repo.intake(
      [
        { provider: 'billing', event: fresh },
        { provider: 'billing', event: { eventId: created.event_id, eventType: 'x', payload: {} } },
        { provider: 'billing', event: { ...refused, payload: { corrected: true } } },
        { provider: 'identity', event: { ...fresh, payload: { n: 2 }, source: 'backfill' } },
      ],
      NO_JOB,
    );
    expect(answers.map((a) => a?.provider ?? null)).toEqual(['billing', null, 'billing', 'identity']);
    const rows = await api.prisma.webhookEvent.findMany({
      where: { id: { in: answers.filter((a) => a !== null).map((a) => a!.id) } },
    });
    const byId = new Map(rows.map((row) => [row.id, row]));
    expect(byId.get(answers[0]!.id)).toMatchObject({
      eventId: fresh.eventId,
      payload: { n: 1 },
      status: 'RECEIVED',
    });
    expect(byId.get(answers[2]!.id)).toMatchObject({
      eventId: refused.eventId,
      payload: { corrected: true },
      status: 'RECEIVED',
      error: null,
    });
    expect(byId.get(answers[3]!.id)).toMatchObject({
      provider: 'identity',
      eventId: fresh.eventId,
      payload: { n: 2 },
      source: 'backfill',
    });
    // Settle the rows this test left RECEIVED so the worker's later tests see a clean inbox.
    await api.prisma.webhookEvent.updateMany({
      where: { id: { in: [answers[0]!.id, answers[2]!.id, answers[3]!.id] } },
      data: { status: 'SKIPPED' },
    });
  });

  it('an unconfigured price fails the event after its attempts (FAILED, replayable); once configured, the redelivery succeeds', async () => {
    const user = await createUser(api.prisma);
    const subId = newSubId();
    const created = subscriptionEvent({
      type: 'subscription.created',
      subId,
      priceId: 'pri_new_team',
      token: checkoutToken(api, user, 'TEAM'),
    });
    const failed = await deliver(api, created);
    expect(failed.status).toBe(200);
    expect(failed.outcome).toBe('failed');
    expect(await api.prisma.webhookEvent.findFirst({ where: { eventId: created.event_id } })).toMatchObject({
      status: 'FAILED',
      error: expect.stringContaining('pri_new_team'),
    });
    api.config.project.priceTiers.pri_new_team = 'TEAM';
    try {
      expect((await deliver(api, created)).outcome).toBe('processed');
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
    expect(paused.outcome).toBe('processed');
    expect(
      await api.prisma.subscription.findUniqueOrThrow({ where: { providerSubscriptionId: subId } }),
    ).toMatchObject({ status: 'PAUSED', tier: 'TEAM' });
  });

  it('a stale event naming a price retired since the subscription moved off it is skipped, a newer one fails', async () => {
    const user = await createUser(api.prisma);
    const subId = newSubId();
    const t0 = new Date(Date.now() - 40 * DAY);
    const t1 = new Date(t0.getTime() + 30 * DAY);
    const token = checkoutToken(api, user, 'PRO', t0);
    const period = { periodStart: t0, periodEnd: t1 };
    const created = subscriptionEvent({
      type: 'subscription.created',
      subId,
      token,
      occurredAt: t0,
      ...period,
    });
    expect((await deliver(api, created)).outcome).toBe('processed');
    // Renewed on the TEAM price: the next period starts on TEAM.
    const moved = subscriptionEvent({
      type: 'subscription.updated',
      subId,
      priceId: PRICE.TEAM,
      occurredAt: t1,
      periodStart: t1,
      periodEnd: new Date(t1.getTime() + 30 * DAY),
    });
    expect((await deliver(api, moved)).outcome).toBe('processed');
    const row = () => api.prisma.subscription.findUniqueOrThrow({ where: { providerSubscriptionId: subId } });
    expect(await row()).toMatchObject({ tier: 'TEAM', priceId: PRICE.TEAM });

    delete api.config.project.priceTiers[PRICE.PRO];
    try {
      // An older event (delivered late, or again under a new id) still naming the retired price.
      const late = subscriptionEvent({
        type: 'subscription.updated',
        subId,
        occurredAt: new Date(t0.getTime() + DAY),
        ...period,
      });
      expect((await deliver(api, late)).outcome).toBe('skipped');
      expect(await api.prisma.webhookEvent.findFirst({ where: { eventId: late.event_id } })).toMatchObject({
        status: 'SKIPPED',
        error: 'stale_event',
      });
      expect(
        await api.prisma.auditLog.count({ where: { action: 'webhook.failed', resourceId: late.event_id } }),
      ).toBe(0);
      expect(await row()).toMatchObject({ tier: 'TEAM', priceId: PRICE.TEAM, lastEventId: moved.event_id });

      // A newer event naming the retired price would change the stored state: it still fails.
      const newer = subscriptionEvent({
        type: 'subscription.updated',
        subId,
        occurredAt: new Date(t1.getTime() + DAY),
        periodStart: t1,
        periodEnd: new Date(t1.getTime() + 30 * DAY),
      });
      expect((await deliver(api, newer)).outcome).toBe('failed');
      expect(await api.prisma.webhookEvent.findFirst({ where: { eventId: newer.event_id } })).toMatchObject({
        status: 'FAILED',
        error: expect.stringContaining(PRICE.PRO),
      });
      expect(await row()).toMatchObject({ tier: 'TEAM', priceId: PRICE.TEAM, lastEventId: moved.event_id });
    } finally {
      api.config.project.priceTiers[PRICE.PRO] = 'PRO';
    }
  });
});
