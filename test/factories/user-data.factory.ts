import { randomUUID } from 'node:crypto';
import type { PrismaClient, User } from '../../src/generated/prisma/client.js';
import { generateApiKey } from '../../src/modules/auth/api-key.util.js';

export interface SeededUser {
  user: User;
  /** Row ids per table, to look them up after an export or a deletion. */
  ids: Record<string, string>;
  apiKeySecretHash: string;
}

/**
 * A user with one row in every table linked to users (owned and kept-with-null-link alike); `ids` is keyed
 * by table name and holds each row's primary key. The deletion test checks this against the catalog.
 */
export async function seedUserWithEverything(
  prisma: PrismaClient,
  identityUserId: string,
  email = `${identityUserId}@example.com`,
): Promise<SeededUser> {
  const user = await prisma.user.create({ data: { identityUserId, email } });
  const tag = randomUUID().slice(0, 8);
  const subscription = await prisma.subscription.create({
    data: {
      userId: user.id,
      providerSubscriptionId: `sub_${tag}`,
      status: 'ACTIVE',
      tier: 'PRO',
      priceId: 'pri_pro',
      currentPeriodEnd: new Date(Date.now() + 30 * 86_400_000),
      lastEventAt: new Date(),
    },
  });
  const credit = await prisma.creditTransaction.create({
    data: { userId: user.id, delta: 100, kind: 'grant', jobId: `grant-${tag}` },
  });
  // A metered call in flight: its reservation (a spend of 5 would sit in the ledger beside it).
  const hold = await prisma.creditHold.create({
    data: { userId: user.id, jobId: `completion-${tag}`, amount: 5 },
  });
  await prisma.user.update({ where: { id: user.id }, data: { creditBalance: 100 } });
  const savedSearch = await prisma.savedSearch.create({
    data: { userId: user.id, name: `search ${tag}`, query: 'q', filters: { a: 1 } },
  });
  const workspace = await prisma.workspace.create({ data: { userId: user.id, name: `ws ${tag}` } });
  const key = generateApiKey();
  const apiKey = await prisma.apiKey.create({
    data: { userId: user.id, name: `key ${tag}`, prefix: key.prefix, secretHash: key.secretHash },
  });
  const feedback = await prisma.feedback.create({ data: { userId: user.id, message: `feedback ${tag}` } });
  const run = await prisma.broadcastRun.create({
    data: { templateKey: 'newsletter', kind: 'marketing', createdBy: 'admin@example.com' },
  });
  const recipient = await prisma.broadcastRecipient.create({
    data: { runId: run.id, userId: user.id, status: 'sent' },
  });
  const consent = await prisma.emailConsentEvent.create({
    data: { userId: user.id, given: true, source: 'signup_form' },
  });
  const message = await prisma.emailMessage.create({
    data: {
      userId: user.id,
      toAddress: email,
      templateKey: 'welcome',
      kind: 'transactional',
      subject: 'Welcome',
      status: 'sent',
      idempotencyKey: `welcome-${tag}`,
      html: '<p>body</p>',
      text: 'body',
    },
  });
  const payment = await prisma.payment.create({
    data: {
      userId: user.id,
      providerTransactionId: `txn_${tag}`,
      status: 'completed',
      amountTotal: 1000,
      currency: 'EUR',
      occurredAt: new Date(),
    },
  });
  const adjustment = await prisma.billingAdjustment.create({
    data: {
      userId: user.id,
      providerAdjustmentId: `adj_${tag}`,
      action: 'refund',
      status: 'approved',
      amountTotal: 500,
      currency: 'EUR',
      occurredAt: new Date(),
    },
  });
  const audit = await prisma.auditLog.create({
    data: { actor: `user:${identityUserId}`, action: 'saved_search.created', userId: identityUserId },
  });
  return {
    user,
    apiKeySecretHash: key.secretHash,
    ids: {
      subscriptions: subscription.id,
      credit_transactions: credit.id,
      credit_holds: hold.jobId,
      saved_searches: savedSearch.id,
      workspaces: workspace.id,
      api_keys: apiKey.id,
      feedback: feedback.id,
      broadcast_recipients: recipient.id,
      broadcast_runs: run.id,
      email_consent_events: consent.id,
      email_messages: message.id,
      payments: payment.id,
      billing_adjustments: adjustment.id,
      audit_logs: audit.id,
    },
  };
}
