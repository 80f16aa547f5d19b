import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { dataSchemaFor, emailEnvelope } from './email-events.js';

/** Resend's published webhook examples (test/contracts/fixtures/resend, see its README). */
const resend = (name: string) =>
  JSON.parse(
    readFileSync(join(process.cwd(), `test/contracts/fixtures/resend/webhook.${name}.json`), 'utf8'),
  ) as { type: string; created_at: string; data: Record<string, unknown> };

const accepted = (payload: unknown): boolean => {
  const envelope = emailEnvelope.safeParse(payload);
  if (!envelope.success) return false;
  const schema = dataSchemaFor(envelope.data.type);
  return schema === null || schema.safeParse(envelope.data.data).success;
};

describe("the e-mail event schemas, on Resend's published examples", () => {
  it.each(['email-bounced', 'email-complained', 'email-delivered', 'email-delivery-delayed'])(
    'accept %s and read its message id and recipients',
    (name) => {
      const event = resend(name);
      expect(accepted(event)).toBe(true);
      expect(dataSchemaFor(event.type)!.parse(event.data)).toMatchObject({
        email_id: '56761188-7520-42d8-8898-ff6fc54ce618',
        to: ['delivered@resend.dev'],
      });
    },
  );

  it('acknowledge an event kind no handler reads (a click) without a data schema', () => {
    expect(dataSchemaFor(resend('email-clicked').type)).toBeNull();
    expect(accepted(resend('email-clicked'))).toBe(true);
  });

  it("never refuse a bounce over fields no handler reads (the receiving server's long diagnostic)", () => {
    const event = resend('email-bounced');
    (event.data.bounce as Record<string, unknown>).message = 'x'.repeat(20_000);
    (event.data.bounce as Record<string, unknown>).subType = 'y'.repeat(500);
    event.data.new_field = { nested: true };
    expect(accepted(event)).toBe(true);
  });

  it('refuse a handled event whose members the handlers read are missing or of the wrong shape', () => {
    const bounce = resend('email-bounced');
    expect(accepted({ ...bounce, data: { ...bounce.data, to: 'delivered@resend.dev' } })).toBe(false);
    expect(accepted({ ...bounce, data: { ...bounce.data, email_id: ['x'] } })).toBe(false);
    expect(accepted({ ...bounce, data: { ...bounce.data, bounce: 'Permanent' } })).toBe(false);
    expect(accepted({ type: 'email.delivered', data: 'delivered@resend.dev' })).toBe(false);
    expect(accepted(['delivered@resend.dev'])).toBe(false);
  });
});
