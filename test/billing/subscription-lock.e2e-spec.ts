import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SubscriptionsRepository } from '../../src/modules/billing/subscriptions/subscriptions.repository.js';
import { createUser } from '../factories/user.factory.js';
import { newSubId } from '../support/billing.js';
import { holding } from '../support/lock-holder.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

/**
 * Issue 15 item 3: the worker's first statement of a subscription event takes the subscription's lock,
 * reads the row and locks its owner in one round trip (the billing_lock_subscriptions function). What it
 * must keep from the three statements it replaces: a waiter reads what the lock holder committed, a row the
 * holder inserted included (one plain statement's snapshot would predate the wait), and the owner's row is
 * locked until the transaction ends. Real PostgreSQL.
 */
describe('SubscriptionsRepository.lockAndFind', () => {
  let env: TestEnv;
  let api: ApiApp;
  let repository: SubscriptionsRepository;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    repository = api.app.get(SubscriptionsRepository);
  });
  afterAll(() => env.close());

  const insertSubscription = (
    tx: Parameters<SubscriptionsRepository['lockAndFind']>[0],
    userId: string,
    subId: string,
  ) =>
    tx.subscription.create({
      data: {
        userId,
        providerSubscriptionId: subId,
        status: 'ACTIVE',
        tier: 'PRO',
        priceId: 'pri_pro',
        lastEventAt: new Date(),
      },
    });

  it('makes a waiter see the row the lock holder inserted, with its owner locked', async () => {
    const user = await createUser(api.prisma);
    const subId = newSubId();
    const holder = await holding(api.prisma, async (tx) => {
      expect(await repository.lockAndFind(tx, subId, { lockOwner: true })).toBeNull();
      await insertSubscription(tx, user.id, subId);
    });
    const waiter = api.prisma.$transaction(async (tx) => {
      const found = await repository.lockAndFind(tx, subId, { lockOwner: true });
      // While the waiter holds the owner's row, nobody else can lock it.
      const others = await api.prisma.$queryRaw<{ id: string }[]>`
        SELECT id FROM users WHERE id = ${user.id}::uuid FOR UPDATE SKIP LOCKED`;
      return { found, othersCouldLock: others.length > 0 };
    });
    // The waiter is blocked on the subscription's lock until the holder commits.
    await new Promise((resolve) => setTimeout(resolve, 200));
    holder.release();
    await holder.done;
    const { found, othersCouldLock } = await waiter;

    expect(found?.subscription).toMatchObject({
      providerSubscriptionId: subId,
      userId: user.id,
      status: 'ACTIVE',
    });
    expect(found?.subscription.lastEventAt).toBeInstanceOf(Date);
    expect(found?.owner).toEqual({
      id: user.id,
      identity_user_id: user.identityUserId,
      current_tier: user.currentTier,
      billing_customer_id: null,
    });
    expect(othersCouldLock).toBe(false);
  });

  it('reads the same row as Prisma does, and leaves the owner alone when asked to', async () => {
    const user = await createUser(api.prisma);
    const subId = newSubId();
    await api.prisma.$transaction((tx) => insertSubscription(tx, user.id, subId));
    const viaPrisma = await api.prisma.subscription.findUniqueOrThrow({
      where: { providerSubscriptionId: subId },
    });
    const result = await api.prisma.$transaction(async (tx) => {
      const found = await repository.lockAndFind(tx, subId, { lockOwner: false });
      const others = await api.prisma.$queryRaw<{ id: string }[]>`
        SELECT id FROM users WHERE id = ${user.id}::uuid FOR UPDATE SKIP LOCKED`;
      return { found, othersCouldLock: others.length > 0 };
    });
    expect(result.found?.subscription).toEqual(viaPrisma);
    expect(result.found?.owner).toBeNull();
    expect(result.othersCouldLock).toBe(true);
  });

  it('takes the same lock as lock(): the expiry job and the webhook worker exclude each other', async () => {
    const subId = newSubId();
    const holder = await holding(api.prisma, (tx) => repository.lock(tx, subId));
    // While lock() is held, lockAndFind waits for it (here: gives up after lock_timeout).
    await expect(
      api.prisma.$transaction(async (tx) => {
        await tx.$executeRawUnsafe(`SET LOCAL lock_timeout = '200ms'`);
        return repository.lockAndFind(tx, subId, { lockOwner: false });
      }),
    ).rejects.toThrow(/lock timeout/);
    holder.release();
    await holder.done;
    await expect(
      api.prisma.$transaction((tx) => repository.lockAndFind(tx, subId, { lockOwner: false })),
    ).resolves.toBeNull();
  });
});
