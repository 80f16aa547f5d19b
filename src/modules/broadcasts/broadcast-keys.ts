import { createHash } from 'node:crypto';

/** Idempotency key of one recipient's message (provider and e-mail log). */
export const recipientKey = (runId: string, userId: string) => `broadcast/${runId}/${userId}`;

/** Same recipients, same key: a batch resent after a crash is delivered once by the provider. */
export const batchKey = (runId: string, userIds: string[]) =>
  `broadcast/${runId}/batch-${createHash('sha256')
    .update([...userIds].sort().join(','))
    .digest('hex')
    .slice(0, 40)}`;
