import { randomUUID } from 'node:crypto';
import type { PrismaService } from '../../src/infra/prisma/prisma.service.js';
import type { Prisma } from '../../src/generated/prisma/client.js';

/** The pinned "now" of the overview tests: months before the real clock, so SQL `now()` would show. */
export const NOW = new Date('2026-06-15T12:00:00.000Z');
const DAY = 86_400_000;

/** NOW minus `days` days plus `ms` milliseconds (ago(7, 1) is just inside the 7-day window). */
export const ago = (days: number, ms = 0) => new Date(NOW.getTime() - days * DAY + ms);
export const AFTER_NOW = new Date(NOW.getTime() + 1);

type UserSeed = Omit<Prisma.UserCreateManyInput, 'identityUserId' | 'email'>;

/**
 * A dataset with a known answer for every number of the overview, including rows exactly on each window
 * boundary, rows 1 ms inside it, rows after NOW, and soft-deleted users. The expected values live in
 * metrics-overview.e2e-spec.ts next to the assertions; the comments here say where each row should land.
 */
export async function seedOverviewDataset(prisma: PrismaService): Promise<Record<string, string>> {
  const ids: Record<string, string> = {};
  const users: Record<string, UserSeed> = {
    // activity: last_active_at on and around the 1/7/30-day boundaries
    old1: { createdAt: ago(400), lastActiveAt: ago(1, 1), marketingConsentGiven: true }, // DAU
    old2: {
      createdAt: ago(400),
      lastActiveAt: ago(1), // exactly 1 day: WAU, not DAU
      marketingConsentGiven: true,
      provenance: 'lm_ebook_spring', // paid (payment 300 days ago)
    },
    old3: { createdAt: ago(100), lastActiveAt: ago(7), provenance: 'lm_webinar' }, // exactly 7 days: MAU only
    old4: { createdAt: ago(100), lastActiveAt: ago(30) }, // exactly 30 days: not active
    old5: { createdAt: ago(100), lastActiveAt: ago(30, 1), marketingConsentGiven: true }, // MAU
    old6: {
      createdAt: ago(100),
      deletedAt: ago(5),
      lastActiveAt: ago(0, -7_200_000), // active 2 h ago but soft-deleted: not active
      marketingConsentGiven: true, // soft-deleted: not in the consent rate
      provenance: 'lm_ebook_x', // soft-deleted lead-magnet signup: counted, and paid
    },
    old7: { createdAt: ago(100), lastActiveAt: AFTER_NOW }, // after NOW: not active
    old8: { createdAt: ago(100), lastActiveAt: ago(7, 1) }, // WAU
    // acquisition: created_at on and around the 7/30-day boundaries
    a1: {
      createdAt: ago(1),
      utmSource: ' Google ',
      lastActiveAt: NOW, // exactly NOW: DAU
      marketingConsentGiven: true,
      provenance: 'lm_ebook_autumn', // its only payment was canceled: not paid
    },
    a2: { createdAt: ago(7, 1), utmSource: 'google', emailDisposable: true, provenance: 'LM_ebook' },
    a3: { createdAt: ago(7), utmSource: 'newsletter', provenance: 'lm_ebook_future' }, // 30-day only
    a4: {
      createdAt: ago(30, 1),
      attributionRecordedAt: ago(30, 1), // recorded without a source: direct
      emailDisposable: true,
      provenance: 'lmx_ebook', // `_` is literal in a prefix: no match for lm_
    },
    a5: { createdAt: ago(30), utmSource: 'google' }, // exactly 30 days: not a recent signup
    a6: { createdAt: NOW, utmSource: '', emailDisposable: true }, // exactly NOW, no attribution: unknown
    a7: { createdAt: AFTER_NOW, marketingConsentGiven: true, provenance: 'lm_ebook_z' }, // after NOW: nowhere
    a8: { createdAt: ago(2), deletedAt: ago(1), utmSource: 'google' }, // soft-deleted signup: counted
  };
  for (let i = 1; i <= 11; i += 1) {
    users[`s${i}`] = { createdAt: ago(20), utmSource: `src${String(i).padStart(2, '0')}` };
  }
  await prisma.user.createMany({
    data: Object.entries(users).map(([name, data]) => {
      ids[name] = randomUUID();
      return { id: ids[name], identityUserId: `seed_${name}`, email: `${name}@example.com`, ...data };
    }),
  });

  const sub = (
    name: string,
    status: Prisma.SubscriptionCreateManyInput['status'],
    tier: string,
    price: { amount: number | null; currency: string | null; interval: string | null; every?: number },
    extra: Partial<Prisma.SubscriptionCreateManyInput> = {},
  ): Prisma.SubscriptionCreateManyInput => ({
    userId: ids.old1,
    providerSubscriptionId: `sub_${name}`,
    status,
    tier,
    priceId: `pri_${tier.toLowerCase()}`,
    unitAmount: price.amount,
    currency: price.currency,
    billingInterval: price.interval,
    billingFrequency: price.every ?? 1,
    lastEventAt: ago(50),
    createdAt: ago(50),
    ...extra,
  });
  const usd = (amount: number, interval = 'month', every = 1) => ({
    amount,
    currency: 'USD',
    interval,
    every,
  });
  await prisma.subscription.createMany({
    data: [
      sub('1', 'ACTIVE', 'PRO', usd(1000)), // 1000 / month
      sub('2', 'ACTIVE', 'PRO', usd(12000, 'year')), // 1000 / month
      sub('3', 'ACTIVE', 'TEAM', { amount: 500, currency: 'usd', interval: 'month' }, { quantity: 3 }), // 1500
      sub('4', 'ACTIVE', 'TEAM', usd(300, 'week', 2)), // 300 x 52 / 12 / 2 = 650
      sub('5', 'ACTIVE', 'PRO', usd(100, 'day')), // 100 x 365 / 12 = 3041.67
      sub('6', 'PAST_DUE', 'PRO', usd(1000)), // at risk, still MRR
      sub('7', 'PAST_DUE', 'PRO', usd(1000), { expiredAt: ago(1) }), // lapsed: not MRR
      sub('8', 'ACTIVE', 'PRO', { amount: 900, currency: 'EUR', interval: 'month' }),
      sub('9', 'TRIALING', 'PRO', usd(1000)),
      sub('10', 'PAUSED', 'TEAM', usd(500)),
      sub('11', 'CANCELED', 'PRO', usd(1000), { canceledAt: ago(30, 1) }), // churned
      sub(
        '12',
        'CANCELED',
        'TEAM',
        { amount: 2400, currency: 'EUR', interval: 'year' },
        { canceledAt: ago(1) },
      ),
      sub('13', 'CANCELED', 'PRO', usd(1000), { canceledAt: ago(30) }), // exactly 30 days: not churned
      sub('14', 'CANCELED', 'PRO', usd(1000), { canceledAt: AFTER_NOW }), // not yet churned at NOW
      sub('15', 'ACTIVE', 'PRO', { amount: null, currency: null, interval: null }), // unpriced
      sub('16', 'ACTIVE', 'PRO', usd(1000), { createdAt: AFTER_NOW }), // after NOW: nowhere
      sub('17', 'ACTIVE', 'PRO', usd(1000, 'fortnight')), // unknown interval: unpriced
    ],
  });

  const payment = (
    name: string,
    status: string,
    amount: number,
    currency: string,
    occurredAt: Date,
    userId: string | null = null,
  ): Prisma.PaymentCreateManyInput => ({
    providerTransactionId: `txn_${name}`,
    status,
    amountTotal: amount,
    currency,
    occurredAt,
    userId,
  });
  await prisma.payment.createMany({
    data: [
      payment('1', 'completed', 5000, 'USD', ago(1)),
      payment('2', 'completed', 2500, 'USD', ago(30, 1)),
      payment('3', 'completed', 9999, 'USD', ago(30)), // exactly 30 days: outside
      payment('4', 'paid', 900, 'EUR', ago(10)),
      payment('5', 'canceled', 7000, 'USD', ago(2), ids.a1), // not collected
      payment('6', 'completed', 1234, 'USD', AFTER_NOW, ids.a3), // after NOW
      payment('7', 'completed', 100000, 'USD', ago(300), ids.old2),
      payment('8', 'completed', 1000, 'USD', ago(50), ids.old6),
    ],
  });

  const adjustment = (
    name: string,
    action: string,
    status: string,
    amount: number,
    currency: string,
    occurredAt: Date,
    providerTransactionId: string | null = null,
  ): Prisma.BillingAdjustmentCreateManyInput => ({
    providerAdjustmentId: `adj_${name}`,
    providerTransactionId,
    action,
    status,
    amountTotal: amount,
    currency,
    occurredAt,
  });
  await prisma.billingAdjustment.createMany({
    data: [
      adjustment('1', 'refund', 'approved', 1000, 'USD', ago(2)),
      adjustment('2', 'refund', 'pending_approval', 500, 'USD', ago(2)),
      adjustment('3', 'credit', 'approved', 300, 'USD', ago(2)),
      adjustment('4', 'refund', 'approved', -200, 'EUR', ago(5)), // sign-agnostic
      adjustment('5', 'refund', 'approved', 700, 'USD', ago(30)), // exactly 30 days: outside
      // A refund of a payment that collected nothing (canceled): capped to 0 and left out, count included.
      adjustment('6', 'refund', 'approved', 7000, 'USD', ago(1), 'txn_5'),
    ],
  });

  const email = (name: string, status: string, createdAt: Date): Prisma.EmailMessageCreateManyInput => ({
    userId: ids.old1,
    toAddress: 'old1@example.com',
    templateKey: 'newsletter',
    kind: 'marketing',
    subject: 'News',
    status,
    idempotencyKey: `seed-${name}`,
    createdAt,
  });
  await prisma.emailMessage.createMany({
    data: [
      email('s1', 'sent', ago(1)),
      email('s2', 'sent', ago(7, 1)),
      email('s3', 'sent', ago(7)), // 30-day only
      email('s4', 'sent', ago(29)),
      email('s5', 'sent', ago(30)), // outside
      email('s6', 'sent', AFTER_NOW), // outside
      email('f1', 'failed', ago(3)),
      email('f2', 'failed', ago(10)),
      email('k1', 'skipped', NOW),
    ],
  });

  const consent = (user: string, given: boolean, createdAt: Date) => ({
    userId: ids[user],
    given,
    source: given ? 'settings' : 'unsubscribe_link',
    createdAt,
  });
  await prisma.emailConsentEvent.createMany({
    data: [
      consent('old3', false, ago(1)),
      consent('old3', false, ago(2)), // the same user twice: one unsubscriber
      consent('old4', false, ago(7)), // 30-day only
      consent('old5', true, ago(1)), // a consent, not a withdrawal
      consent('old1', false, ago(30)), // outside
      consent('old8', false, AFTER_NOW), // outside
      consent('old6', false, ago(3)), // soft-deleted users' withdrawals still count
    ],
  });

  const run = (status: Prisma.BroadcastRunCreateManyInput['status'], createdAt: Date, extra = {}) => ({
    status,
    templateKey: 'newsletter',
    kind: 'marketing',
    createdBy: 'user:seed_admin',
    createdAt,
    ...extra,
  });
  const running = randomUUID();
  ids.broadcast = running;
  await prisma.broadcastRun.createMany({
    data: [
      run('done', ago(2), { recipientsTotal: 10, sentCount: 10, finishedAt: ago(2, 60_000) }),
      run('running', ago(0, -3_600_000), {
        id: running,
        recipientsTotal: 50,
        sentCount: 20,
        failedCount: 2,
        skippedCount: 3,
        startedAt: ago(0, -3_500_000),
      }),
      run('queued', AFTER_NOW), // after NOW: not the last broadcast at NOW
    ],
  });
  return ids;
}
