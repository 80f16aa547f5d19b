import { randomUUID } from 'node:crypto';

/** Idempotency key of one recipient's message (provider and e-mail log). */
export const recipientKey = (runId: string, userId: string) => `broadcast/${runId}/${userId}`;

/**
 * Idempotency key of one batch request. Drawn once, when the batch's recipients are reserved, and
 * stored with them: a resumed run resends the stored batch under the stored key (less the members the
 * send policy refuses now), so what the live audience has become since (unsubscribes, new users, other
 * tiers) cannot change the key.
 */
export const newBatchKey = (runId: string) => `broadcast/${runId}/batch-${randomUUID()}`;
