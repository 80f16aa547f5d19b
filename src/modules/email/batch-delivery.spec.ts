import { describe, expect, it } from '@jest/globals';
import { ProviderHttpError } from '../../infra/http/http-client.js';
import { isOutageFailure } from '../../infra/queue/job-failure.js';
import { DeliveryInterrupted } from './batch-delivery.js';
import { EmailSendError } from './providers/email-provider.js';

/** The job sees a delivery's interruption; infra/'s outage rule reads the provider's answer through it. */
describe('DeliveryInterrupted and the outage rule (isOutageFailure)', () => {
  const interrupted = (status: number, kind: 'server_error' | 'conflict') =>
    new DeliveryInterrupted(
      new EmailSendError(
        kind,
        status,
        `provider answered ${status}`,
        new ProviderHttpError('email', status, null),
      ),
    );

  it('is an outage around a provider that kept failing (single sends stopped by three failures in a row)', () => {
    expect(isOutageFailure(interrupted(503, 'server_error'))).toBe(true);
  });

  it('is no outage around a 4xx (a key still in progress)', () => {
    expect(isOutageFailure(interrupted(409, 'conflict'))).toBe(false);
  });
});
