import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import { JOBS } from '../../src/infra/queue/queues.js';
import {
  PARKED_REASON,
  SCRUB_BILLING_ARCHIVE_SQL,
} from '../../src/modules/webhooks/webhook-inbox.repository.js';
import { AccountDeletionService } from '../../src/modules/users/account-deletion.service.js';
import type { FakeBillingApi } from '../fakes/billing-api.js';
import { createUser } from '../factories/user.factory.js';
import {
  billingApiWorld,
  checkoutToken,
  deliver,
  newSubId,
  PRICE,
  send,
  subscriptionEvent,
} from '../support/billing.js';
import type { ApiApp, TestEnv } from '../support/test-env.js';
import type { User } from '../../src/generated/prisma/client.js';
import {
  fixture,
  type Json,
  newSuffix,
  rebase,
  shiftTo,
  withCheckoutToken,
} from '../contracts/contract-support.js';
import { waitFor } from '../support/wait.js';
import { settled } from '../support/webhooks.js';

const DAY_MS = 86_400_000;
type PaddleEvent = { event_id: string; event_type: string; occurred_at: string; data: Json };

/**
 * The account lifecycle against its other writers (audit of 2026-12-07): what a webhook that lands while
 * an account waits for its erasure leaves behind.
 */
describe('account erasure against concurrent writers', () => {
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;
  let billing: FakeBillingApi;

  beforeAll(async () => {
    // The prices of Paddle's published fixtures, as the contract suite maps them.
    ({ env, api, worker, billing } = await billingApiWorld({
      BILLING_PRICE_TIERS:
        'pri_01gsz8x8sawmvhz1pv30nge1ke:PRO,pri_01h84cdy3xatsp16afda2gekzy:PRO,pri_pro:PRO',
    }));
  });
  afterAll(() => env.close());

  /**
   * Runs the nightly hard delete until these accounts are gone: a run skips a row another transaction
   * holds (FOR UPDATE SKIP LOCKED), such as a webhook the worker is still applying for the user.
   */
  const hardDeleted = (ids: string[]) =>
    waitFor(async () => {
      await worker.get(AccountDeletionService).hardDeleteDue();
      return (await api.prisma.user.count({ where: { id: { in: ids } } })) === 0;
    });
  beforeEach(() => billing.reset());

  describe('a subscription that starts after the deletion request', () => {
    it('is cancelled at the provider, so the erased person is not billed on', async () => {
      const user = await createUser(api.prisma);
      // The checkout overlay was opened (token minted) before the user asked for the deletion.
      const token = checkoutToken(api, user, 'PRO');
      const authorization = await api.bearer(user.identityUserId, user.email);
      const deleted = await api.http.delete('/api/v1/account/me').set('Authorization', authorization);
      expect(deleted.status).toBe(202);
      // The deletion's hooks ran and found nothing to cancel yet.
      const queue = worker.get(QueueService).queue(JOBS.accountDeletionRequested.queue);
      const jobId = `deletion-requested-${user.id}-${Date.parse(deleted.body.deleted_at as string)}`;
      await waitFor(async () => (await queue.getJob(jobId))?.finishedOn);
      expect(billing.requests).toEqual([]);

      // The payment goes through afterwards: the provider starts a subscription for the deleted account.
      const subId = newSubId();
      billing.seedEntity({ id: subId, status: 'active', items: [{ price: { id: PRICE.PRO }, quantity: 1 }] });
      const created = await deliver(
        api,
        subscriptionEvent({ type: 'subscription.created', subId, priceId: PRICE.PRO, token }),
      );
      expect(created.outcome).toBe('processed');

      // Cancelled at once, as the deletion request cancels every live subscription.
      const [cancel] = await waitFor(async () => {
        const entries = await api.prisma.auditLog.findMany({
          where: { action: 'billing.cancel_requested', userId: user.identityUserId },
        });
        return entries.length > 0 ? entries : null;
      });
      expect(cancel).toMatchObject({ actor: 'system:account-deletion' });
      expect(cancel.details).toMatchObject({ reason: 'account_deletion', subscription_id: subId });
      expect(billing.requests.find((r) => r.path === `/subscriptions/${subId}/cancel`)).toMatchObject({
        body: { effective_from: 'immediately' },
      });
      expect(billing.subscriptions.get(subId)?.status).toBe('canceled');
      const row = await api.prisma.subscription.findUniqueOrThrow({
        where: { providerSubscriptionId: subId },
      });
      await waitFor(async () => (await queue.getJob(`${jobId}-${row.id}`))?.finishedOn);

      // The erasure then leaves nothing billed behind.
      await api.prisma.user.update({
        where: { id: user.id },
        data: { deletedAt: new Date(Date.now() - 31 * DAY_MS) },
      });
      await hardDeleted([user.id]);
    });
  });

  describe('the billing archive', () => {
    /** Paddle's published customer and transaction notifications, about one customer of this test. */
    const CUSTOMER = 'ctm_01h844p3h41s12zs5mn4axja51';
    const paddle = (name: string, suffix: string) =>
      rebase(fixture<PaddleEvent>('paddle', `node-sdk.${name}`), {
        suffix,
        shiftMs: shiftTo('2023-08-22T07:15:45.366122Z'),
        // One customer: the published events name three.
        ids: { ctm_01h8e18bxp9hby49dnm8ewf0m0: CUSTOMER, ctm_01h8441jn5pcwrfhwh78jqt8hk: CUSTOMER },
      });
    const archived = (eventId: string) =>
      api.prisma.webhookEvent.findUniqueOrThrow({
        where: { provider_eventId: { provider: 'billing', eventId } },
      });
    /** The customer's notifications as the provider sends them, archived raw (name, address, cardholder). */
    const notify = async (user: User) => {
      const suffix = newSuffix();
      const events = [
        paddle('customer-created', suffix),
        paddle('customer-updated', suffix),
        withCheckoutToken(paddle('transaction-completed', suffix), checkoutToken(api, user)),
      ];
      for (const event of events) {
        expect((await deliver(api, event)).status).toBe(200);
        expect((await archived(event.event_id)).payload).toEqual(event);
      }
      return { customerId: `${CUSTOMER}${suffix}`, events };
    };
    const PERSONAL = ['sam@example.com', 'Sam Miller', 'alex@example.com', 'Alex Wilson', 'Joe Bloggs'];

    it("keeps no e-mail address or name of the erased user's customer; other customers' rows stay", async () => {
      const erased = await createUser(api.prisma);
      const kept = await createUser(api.prisma);
      // Shares the kept user's provider customer through an old subscription (two accounts, one address).
      const sharing = await createUser(api.prisma);
      const ofErased = await notify(erased);
      const ofKept = await notify(kept);
      await api.prisma.user.update({
        where: { id: erased.id },
        data: { billingCustomerId: ofErased.customerId, deletedAt: new Date(Date.now() - 31 * DAY_MS) },
      });
      await api.prisma.user.update({
        where: { id: kept.id },
        data: { billingCustomerId: ofKept.customerId },
      });
      await api.prisma.subscription.create({
        data: {
          userId: sharing.id,
          providerSubscriptionId: newSubId(),
          providerCustomerId: ofKept.customerId,
          status: 'CANCELED',
          tier: 'PRO',
          priceId: PRICE.PRO,
          lastEventAt: new Date(),
        },
      });
      await api.prisma.user.update({
        where: { id: sharing.id },
        data: { deletedAt: new Date(Date.now() - 31 * DAY_MS) },
      });
      const keptBefore = await Promise.all(ofKept.events.map((e) => archived(e.event_id)));

      await hardDeleted([erased.id, sharing.id]);

      for (const event of ofErased.events) {
        const row = await archived(event.event_id);
        expect({ id: event.event_id, payload: row.payload }).toEqual({
          id: event.event_id,
          payload: { redacted: true, type: event.event_type },
        });
      }
      const billingRows = JSON.stringify(
        await api.prisma.webhookEvent.findMany({
          where: { provider: 'billing', eventId: { in: ofErased.events.map((e) => e.event_id) } },
          omit: { intakeBatch: true },
        }),
      );
      for (const datum of PERSONAL) expect(billingRows).not.toContain(datum);
      // The kept customer's rows are untouched, also by the erasure of the account that shared it.
      expect(await Promise.all(ofKept.events.map((e) => archived(e.event_id)))).toEqual(keptBefore);
    });

    it("leaves the events still to be applied of the erased user's customer: another account may be paying through it", async () => {
      // The erased person signed up again with the same address; Paddle reuses their customer for it.
      const erased = await createUser(api.prisma);
      const again = await createUser(api.prisma);
      const suffix = newSuffix();
      const PUBLISHED_SUB = 'sub_01h7ht5z5wdg9pz18jx1fagp8k';
      const SUBSCRIPTION_CUSTOMER = 'ctm_01h7hswb86rtps5ggbq7ybydcw';
      const customerId = `${SUBSCRIPTION_CUSTOMER}${suffix}`;
      const story = (name: string, ids: Record<string, string> = {}) =>
        rebase(fixture<PaddleEvent>('paddle', `node-sdk.${name}`), {
          suffix,
          shiftMs: shiftTo('2023-08-18T10:46:18.792661Z', 3_600_000),
          ids: { ctm_01h8441jn5pcwrfhwh78jqt8hk: SUBSCRIPTION_CUSTOMER, ...ids },
        });
      // The erased user's own notification, applied long ago.
      const own = story('customer-created');
      expect((await deliver(api, own)).status).toBe(200);
      // The new account's subscription: an update that arrived before its created is parked until then.
      const parked = story('subscription-updated');
      expect((await deliver(api, parked)).outcome).toBe('skipped');
      expect(await archived(parked.event_id)).toMatchObject({ error: 'unknown_subscription' });
      // A second checkout of the new account names a price not configured yet: FAILED, re-applied later.
      const failed = withCheckoutToken(
        story('subscription-created', {
          [PUBLISHED_SUB]: 'sub_01h7ht5z5wdg9pz18jx1fagp8m',
          evt_01h7ht60jy5hpdv5x8tfsaxje4: 'evt_01h7ht60jy5hpdv5x8tfsaxje5',
          ntf_01h7ht60n4grsa2a5ddd54h1j0: 'ntf_01h7ht60n4grsa2a5ddd54h1j1',
          pri_01gsz8x8sawmvhz1pv30nge1ke: 'pri_01gsz8x8sawmvhz1pv30nge1kz',
        }),
        checkoutToken(api, again),
      );
      expect((await deliver(api, failed)).outcome).toBe('failed');
      expect((await archived(failed.event_id)).retryAt).not.toBeNull();
      await api.prisma.user.update({
        where: { id: erased.id },
        data: { billingCustomerId: customerId, deletedAt: new Date(Date.now() - 31 * DAY_MS) },
      });
      const created = withCheckoutToken(story('subscription-created'), checkoutToken(api, again));

      const queue = api.app.get(QueueService).queue(JOBS.applyWebhooks.queue);
      await queue.pause();
      try {
        // Paid, accepted, not applied yet when the nightly erasure runs.
        expect((await send(api, created)).body).toMatchObject({ status: 'accepted' });
        await hardDeleted([erased.id]);
        expect((await archived(own.event_id)).payload).toEqual({ redacted: true, type: 'customer.created' });
        for (const [event, status] of [
          [created, 'RECEIVED'],
          [failed, 'FAILED'],
          [parked, 'SKIPPED'],
        ] as const) {
          const row = await archived(event.event_id);
          expect({ id: event.event_id, status: row.status, payload: row.payload }).toEqual({
            id: event.event_id,
            status,
            payload: event,
          });
        }
      } finally {
        await queue.resume();
      }

      // The new account gets what it paid for, and the parked update is applied after its created.
      expect(await settled(api, 'billing', created.event_id)).toMatchObject({ status: 'PROCESSED' });
      const subscription = await api.prisma.subscription.findUniqueOrThrow({
        where: { providerSubscriptionId: `${PUBLISHED_SUB}${suffix}` },
      });
      expect(subscription).toMatchObject({ userId: again.id, providerCustomerId: customerId, tier: 'PRO' });
      expect(await archived(parked.event_id)).toMatchObject({ status: 'PROCESSED', error: null });
    });
  });

  it('finds the billing archive rows to scrub through the customer index, not a scan of every billing row', async () => {
    await api.prisma.$executeRaw`
      INSERT INTO webhook_events (id, provider, event_id, event_type, payload, status)
      SELECT gen_random_uuid(), CASE WHEN i % 4 = 0 THEN 'email' ELSE 'billing' END, 'plan_probe_' || i,
             'transaction.completed',
             jsonb_build_object('event_type', 'transaction.completed',
                                'data', jsonb_build_object('customer_id', 'ctm_probe_' || i)),
             'PROCESSED'::"WebhookEventStatus"
      FROM generate_series(1, 4000) AS i`;
    try {
      await api.prisma.$executeRaw`ANALYZE webhook_events`;
      const { rows } = await api.prisma.pool.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN ${SCRUB_BILLING_ARCHIVE_SQL}`,
        [['ctm_probe_1', 'ctm_probe_2'], PARKED_REASON, new Date(Date.now() - 30 * DAY_MS)],
      );
      const plan = rows.map((row) => row['QUERY PLAN']).join('\n');
      expect(plan).toContain('webhook_events_billing_customer_idx');
      expect(plan).not.toContain('Seq Scan');
    } finally {
      await api.prisma.$executeRaw`DELETE FROM webhook_events WHERE event_id LIKE 'plan_probe_%'`;
    }
  });

  it('has reviewed every column that outlives a user (tables without a cascading foreign key to users)', async () => {
    const columns = await api.prisma.$queryRaw<{ column: string }[]>`
      SELECT c.table_name || '.' || c.column_name AS column
      FROM information_schema.columns c
      WHERE c.table_schema = 'public' AND c.table_name NOT IN ('users', '_prisma_migrations')
        AND NOT EXISTS (SELECT 1 FROM pg_constraint k
                        WHERE k.contype = 'f' AND k.confrelid = 'users'::regclass AND k.confdeltype = 'c'
                          AND k.conrelid = format('%I', c.table_name)::regclass)
      ORDER BY 1`;
    expect(columns.length).toBeGreaterThan(50);
    // A column added to one of these tables, or a new table without a cascading user key, fails here until
    // its fate on erasure is written down (docs/decisions/users.md, "What outlives an erased user").
    expect(columns.map((c) => c.column)).toEqual(Object.keys(OUTLIVES_ERASURE).sort());
  });
});

/**
 * What each column of a table that keeps its rows after a user's erasure holds of that user, and why it may.
 * The key is `table.column`; every such column of the schema must be listed.
 */
const NOTHING = 'no personal data';
const UNLINKED = 'the user link, set to null by the erasure (SPEC erasure rule 2, payments: decisions)';
const PROVIDER_ID = "a provider's id (pseudonymous), kept with the row";
const OUTLIVES_ERASURE: Record<string, string> = {
  ...Object.fromEntries(
    ['id', 'action', 'resource_type', 'request_id', 'created_at'].map((c) => [`audit_logs.${c}`, NOTHING]),
  ),
  'audit_logs.actor': 'user:<identity id>, pseudonymous, kept (decisions/users.md)',
  'audit_logs.user_id': UNLINKED,
  'audit_logs.resource_id': 'the user id of user.* entries (pseudonymous), kept',
  'audit_logs.details': 'curated keys, never an address or a body (the deletion test checks addresses)',
  ...Object.fromEntries(
    [
      'id',
      'action',
      'status',
      'amount_total',
      'currency',
      'occurred_at',
      'created_at',
      'updated_at',
      'clawed_back_credits',
      'restored_credits',
      'type',
    ].map((c) => [`billing_adjustments.${c}`, NOTHING]),
  ),
  'billing_adjustments.user_id': UNLINKED,
  'billing_adjustments.provider_adjustment_id': PROVIDER_ID,
  'billing_adjustments.provider_transaction_id': PROVIDER_ID,
  ...Object.fromEntries(
    ['id', 'run_id', 'status', 'error', 'created_at', 'batch_key'].map((c) => [
      `broadcast_recipients.${c}`,
      NOTHING,
    ]),
  ),
  'broadcast_recipients.user_id': UNLINKED,
  'broadcast_recipients.provider_message_id': PROVIDER_ID,
  ...Object.fromEntries(
    [
      'id',
      'status',
      'template_key',
      'kind',
      'audience',
      'bypass_consent',
      'recipients_total',
      'sent_count',
      'failed_count',
      'skipped_count',
      'error',
      'created_at',
      'started_at',
      'finished_at',
      'updated_at',
      'request_hash',
    ].map((c) => [`broadcast_runs.${c}`, NOTHING]),
  ),
  'broadcast_runs.created_by': "the admin's actor string user:<identity id>, as audit actors",
  'broadcast_runs.idempotency_key':
    "the admin client's opaque Idempotency-Key: A-Z a-z 0-9 . _ ~ : - only, so never an address",
  ...Object.fromEntries(['domain', 'source', 'added_at'].map((c) => [`disposable_domains.${c}`, NOTHING])),
  'email_suppressions.email': 'the address, kept after erasure: product decision pending (audit 2026-12-07)',
  ...Object.fromEntries(
    ['reason', 'source_event_id', 'created_at', 'id'].map((c) => [`email_suppressions.${c}`, NOTHING]),
  ),
  ...Object.fromEntries(['id', 'rating', 'page', 'created_at'].map((c) => [`feedback.${c}`, NOTHING])),
  'feedback.user_id': UNLINKED,
  'feedback.message': "the user's free text, kept unlinked (SPEC erasure rule 2)",
  ...Object.fromEntries(
    [
      'name',
      'last_started_at',
      'last_finished_at',
      'last_status',
      'last_error',
      'last_duration_ms',
      'runs',
    ].map((c) => [`job_runs.${c}`, NOTHING]),
  ),
  ...Object.fromEntries(
    ['id', 'queue', 'job_name', 'attempts', 'last_error', 'created_at', 'dispatched_at', 'completed_at'].map(
      (c) => [`outbox.${c}`, NOTHING],
    ),
  ),
  'outbox.job_id': 'may name the user id (pseudonymous); pruned 7 days after completion',
  'outbox.payload': 'user ids and template data, never an address; pruned 7 days after completion',
  ...Object.fromEntries(
    ['id', 'status', 'origin', 'tier', 'amount_total', 'currency', 'occurred_at', 'created_at'].map((c) => [
      `payments.${c}`,
      NOTHING,
    ]),
  ),
  'payments.user_id': UNLINKED,
  'payments.provider_transaction_id': PROVIDER_ID,
  'payments.provider_subscription_id': PROVIDER_ID,
  ...Object.fromEntries(
    ['provider', 'event_id', 'event_type', 'processed_at'].map((c) => [
      `processed_webhook_events.${c}`,
      NOTHING,
    ]),
  ),
  ...Object.fromEntries(
    ['name', 'checkpoint', 'last_run_at', 'last_run_processed', 'updated_at', 'lease_until'].map((c) => [
      `sync_checkpoints.${c}`,
      NOTHING,
    ]),
  ),
  ...Object.fromEntries(
    [
      'id',
      'provider',
      'event_id',
      'event_type',
      'status',
      'error',
      'attempts',
      'occurred_at',
      'received_at',
      'processed_at',
      'source',
      'intake_batch',
      'auto_reapplies',
      'retry_at',
    ].map((c) => [`webhook_events.${c}`, NOTHING]),
  ),
  'webhook_events.payload':
    "scrubbed at erasure: identity rows by identity id, e-mail rows by message id and address, billing rows by the user's customer ids",
};
