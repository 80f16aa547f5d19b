import { describe, expect, it } from '@jest/globals';
// @ts-expect-error plain ESM script without type declarations
import { DEV_BILLING_WEBHOOK_SECRET } from '../../scripts/lib/dev-secrets.mjs';
// @ts-expect-error plain ESM script without type declarations
import { paddleSignature as scriptSignature } from '../../scripts/lib/paddle.mjs';
import { DEV_BILLING_WEBHOOK_SECRET as SERVICE_DEFAULT } from '../../src/config/env.js';
import { paddleSignature, verifyPaddleSignature } from '../../src/modules/billing/intake/paddle-signature.js';

/** The scripts run without a build, so they restate two things of src/: kept equal here. */
describe('what the development scripts share with the service', () => {
  it("uses the service's development billing webhook secret", () => {
    expect(DEV_BILLING_WEBHOOK_SECRET).toBe(SERVICE_DEFAULT);
  });

  it('signs billing notifications as the service verifies them', () => {
    const body = '{"event_id":"evt_1"}';
    const ts = Math.floor(Date.now() / 1000);
    const signature = (scriptSignature as (s: string, t: number, b: string) => string)(
      'secret-0123',
      ts,
      body,
    );
    expect(signature).toBe(paddleSignature('secret-0123', ts, body));
    expect(verifyPaddleSignature(`ts=${ts};h1=${signature}`, Buffer.from(body), 'secret-0123').ok).toBe(true);
  });
});
