import { randomUUID } from 'node:crypto';
import { expect } from '@jest/globals';
import type { PrismaService } from '../../src/infra/prisma/prisma.service.js';
import { CreditsService } from '../../src/modules/credits/credits.service.js';
import type { ApiApp } from './test-env.js';

/**
 * Every user's cached balance equals the sum of its deltas (the spec's definition) and none is negative
 * (unless `allowNegative`: a claw-back may take a balance below zero). The purchased part of a balance is
 * never negative and never more than a positive balance.
 */
export async function expectLedgerConsistent(
  prisma: PrismaService,
  options: { allowNegative?: boolean } = {},
): Promise<void> {
  const drift = await prisma.$queryRaw<{ id: string; cached: number; sum: bigint }[]>`
    SELECT u.id, u.credit_balance AS cached, COALESCE(SUM(t.delta), 0)::bigint AS sum
    FROM users u LEFT JOIN credit_transactions t ON t.user_id = u.id
    GROUP BY u.id HAVING u.credit_balance <> COALESCE(SUM(t.delta), 0)
      OR (u.credit_balance < 0 AND NOT ${options.allowNegative ?? false})
      OR u.purchased_credits < 0 OR u.purchased_credits > GREATEST(u.credit_balance, 0)`;
  expect(drift).toEqual([]);
}

/** Grants through the real ledger (kind grant, a fresh job id). */
export async function grantCredits(api: ApiApp, userId: string, amount: number): Promise<void> {
  const credits = api.app.get(CreditsService);
  await api.prisma.$transaction((tx) =>
    credits.grant(tx, { userId, amount, jobId: `test-grant-${randomUUID()}` }),
  );
}
