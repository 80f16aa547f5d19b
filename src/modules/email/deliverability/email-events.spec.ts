import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { archivableEmailPayload, dataSchemaFor, emailEnvelope } from './email-events.js';

/** Resend's published webhook examples (test/contracts/fixtures/resend, see its README). */
const resend = (name: string) =>
  JSON.parse(
    readFileSync(join(process.cwd(), `test/contracts/fixtures/resend/webhook.${name}.json`), 'utf8'),
  ) as { type: string; created_at: string; data: Record<string, unknown> };

const EMAIL_ID = '56761188-7520-42d8-8898-ff6fc54ce618';

describe('archivableEmailPayload', () => {
  it('keeps the envelope, email_id, the recipients and the bounce type of a bounce, nothing else', () => {
    expect(archivableEmailPayload(resend('email-bounced'))).toEqual({
      type: 'email.bounced',
      created_at: '2024-11-22T23:41:12.126Z',
      data: { email_id: EMAIL_ID, to: ['delivered@resend.dev'], bounce: { type: 'Permanent' } },
    });
  });

  it.each(['email-complained', 'email-delivered', 'email-delivery-delayed', 'email-clicked'])(
    'keeps the envelope, email_id and the recipients of %s',
    (name) => {
      const event = resend(name);
      expect(archivableEmailPayload(event)).toEqual({
        type: event.type,
        created_at: event.created_at,
        data: { email_id: EMAIL_ID, to: ['delivered@resend.dev'] },
      });
    },
  );

  it("drops subject, sender, tags, template and broadcast ids, a click's IP, user agent and link", () => {
    for (const name of ['email-bounced', 'email-clicked']) {
      const event = resend(name);
      event.data.headers = [{ name: 'X-Entity-Ref-ID', value: 'ref-jane' }];
      event.data.new_field = 'Jane';
      const text = JSON.stringify(archivableEmailPayload(event));
      for (const leak of [
        'Sending this example',
        'onboarding@resend.dev',
        'Acme',
        'confirm_email',
        '43f68331-0622-4e15-8202-246a0388854b',
        '8b146471-e88e-4322-86af-016cd36fd216',
        '122.115.53.11',
        'Mozilla',
        'https://resend.com',
        'suppression list',
        'Suppressed',
        'ref-jane',
        'Jane',
      ])
        expect({ name, leak, found: text.includes(leak) }).toEqual({ name, leak, found: false });
    }
  });

  it('archives the recipients trimmed and lower-cased, as the suppression list and the erasure compare them', () => {
    const event = resend('email-delivered');
    event.data.to = [' Jane.Doe@Example.COM ', 'b@example.org'];
    expect(archivableEmailPayload(event)).toMatchObject({
      data: { to: ['jane.doe@example.com', 'b@example.org'] },
    });
  });

  it('leaves the handlers every field they read: the projection of each example passes their schemas', () => {
    for (const name of ['email-bounced', 'email-complained', 'email-delivered', 'email-delivery-delayed']) {
      const envelope = emailEnvelope.parse(archivableEmailPayload(resend(name)));
      expect(dataSchemaFor(envelope.type)!.safeParse(envelope.data).success).toBe(true);
    }
  });

  it('keeps a malformed event malformed: a member of the wrong shape becomes null, never its content', () => {
    const malformed = archivableEmailPayload({
      type: 'email.bounced',
      created_at: { at: 'Jane' },
      data: { email_id: ['Jane'], to: ['a@example.com', { name: 'Jane' }, 7], bounce: 'Permanent' },
    });
    expect(malformed).toEqual({
      type: 'email.bounced',
      created_at: null,
      data: { email_id: null, to: ['a@example.com', null, 7], bounce: null },
    });
    const envelope = emailEnvelope.parse(malformed);
    expect(dataSchemaFor(envelope.type)!.safeParse(envelope.data).success).toBe(false);
    const data = archivableEmailPayload({ type: 'email.bounced', data: { to: 'a@example.com', bounce: {} } });
    expect(data).toEqual({ type: 'email.bounced', data: { to: null, bounce: {} } });
    expect(dataSchemaFor('email.bounced')!.safeParse((data as { data: unknown }).data).success).toBe(false);
  });

  it('keeps no data of another kind of event, and survives bodies that are not objects', () => {
    expect(
      archivableEmailPayload({
        type: 'contact.created',
        created_at: '2024-11-22T23:41:12.126Z',
        data: { id: 'c1', email: 'jane@example.com', first_name: 'Jane', last_name: 'Doe' },
      }),
    ).toEqual({ type: 'contact.created', created_at: '2024-11-22T23:41:12.126Z', data: {} });
    expect(archivableEmailPayload(['jane@example.com'])).toEqual({ not_an_object: true });
    expect(archivableEmailPayload('jane@example.com')).toEqual({ not_an_object: true });
    expect(archivableEmailPayload({ unparsable: true })).toEqual({ unparsable: true });
    expect(archivableEmailPayload({ type: 'email.sent', data: 'jane@example.com' })).toEqual({
      type: 'email.sent',
      data: null,
    });
  });

  it('is stable: the projection of a projection is itself', () => {
    for (const payload of [resend('email-bounced'), resend('email-clicked'), ['x'], { unparsable: true }]) {
      const once = archivableEmailPayload(payload);
      expect(archivableEmailPayload(once)).toEqual(once);
    }
  });
});
