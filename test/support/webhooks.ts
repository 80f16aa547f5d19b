import type { Response } from 'supertest';
import type { ApiApp } from './test-env.js';
import { waitFor } from './wait.js';

/** What the worker made of an accepted event: the archive row's final status, lower-cased. */
export type Outcome = 'processed' | 'skipped' | 'failed' | 'duplicate' | 'refused';

export type Delivered = Response & { outcome: Outcome };

/**
 * Waits until the worker has applied an accepted event (its archive row left RECEIVED) and returns the row.
 * The test's worker must be running.
 */
export async function settled(
  api: ApiApp,
  provider: 'billing' | 'identity' | 'email',
  eventId: string,
  timeoutMs = 10_000,
) {
  return waitFor(
    async () => {
      const row = await api.prisma.webhookEvent.findUnique({
        where: { provider_eventId: { provider, eventId } },
      });
      return row && row.status !== 'RECEIVED' ? row : null;
    },
    timeoutMs,
    10,
  );
}

/** The response of a receiver, with the outcome once the worker has applied it. */
export async function withOutcome(
  api: ApiApp,
  provider: 'billing' | 'identity' | 'email',
  eventId: string | undefined,
  res: Response,
): Promise<Delivered> {
  const body = res.body as { status?: string } | undefined;
  let outcome: Outcome = 'refused';
  if (res.status === 200 && body?.status === 'duplicate') outcome = 'duplicate';
  else if (res.status === 200 && body?.status === 'accepted' && eventId) {
    const row = await settled(api, provider, eventId);
    outcome = row.status.toLowerCase() as Outcome;
  }
  return Object.assign(res, { outcome });
}
