import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { archivableEmailPayload } from '../../src/modules/email/deliverability/email-events.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

const MIGRATION = join(
  process.cwd(),
  'prisma/migrations/20261207091000_email_archive_projection/migration.sql',
);
const fixture = (name: string) =>
  JSON.parse(
    readFileSync(join(process.cwd(), `test/contracts/fixtures/resend/webhook.${name}.json`), 'utf8'),
  ) as { type: string; data: Record<string, unknown> };

/** E-mail events as the receiver archived them before: raw. */
function rawEvents(): unknown[] {
  const events: unknown[] = [
    'email-bounced',
    'email-complained',
    'email-delivered',
    'email-delivery-delayed',
    'email-clicked',
  ].map(fixture);
  const mixedCase = fixture('email-bounced');
  mixedCase.data.to = [' Jane.Doe@Example.COM\t\n', 'b@example.org'];
  events.push(mixedCase);
  events.push({
    type: 'email.bounced',
    created_at: { at: 'Jane' },
    data: { email_id: ['Jane'], to: ['A@example.com', { name: 'Jane' }, 7, null], bounce: 'Permanent' },
  });
  events.push({ type: 'email.bounced', data: { to: 'Jane@example.com', bounce: { subType: 'General' } } });
  events.push({ type: 'contact.created', data: { id: 'c1', email: 'jane@example.com', first_name: 'Jane' } });
  events.push({ type: 'email.sent', data: 'jane@example.com' }, { type: 'email.sent' }, { unparsable: true });
  events.push(['jane@example.com'], 'jane@example.com');
  return events;
}

describe('migration 20261207091000_email_archive_projection', () => {
  let db: TestDatabase;
  let client: pg.Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
  });
  afterAll(async () => {
    await client.end();
    await db.drop();
  });

  const insert = (provider: string, eventId: string, payload: unknown) =>
    client.query(
      `INSERT INTO webhook_events (id, provider, event_id, event_type, payload, status)
       VALUES (gen_random_uuid(), $1, $2, 'any', $3::jsonb, 'PROCESSED')`,
      [provider, eventId, JSON.stringify(payload)],
    );
  const payloads = async () =>
    new Map(
      (
        await client.query<{ event_id: string; payload: unknown }>(
          'SELECT event_id, payload FROM webhook_events ORDER BY event_id',
        )
      ).rows.map((row) => [row.event_id, row.payload]),
    );
  // The template database has the migration applied already (with its index): run its script again.
  const migrate = () =>
    client.query(
      readFileSync(MIGRATION, 'utf8').replace(
        'CREATE INDEX "webhook_events_email_data_idx"',
        'CREATE INDEX IF NOT EXISTS "webhook_events_email_data_idx"',
      ),
    );

  it('rewrites the archived e-mail events to what archivableEmailPayload keeps, and nothing else', async () => {
    const raw = rawEvents();
    for (const [i, payload] of raw.entries())
      await insert('email', `raw_${String(i).padStart(2, '0')}`, payload);
    const redacted = { redacted: true, type: 'email.bounced' };
    await insert('email', 'scrubbed', redacted);
    const billing = { event_type: 'subscription.updated', data: { id: 'sub_1', to: ['Jane@Example.com'] } };
    await insert('billing', 'billing', billing);

    await migrate();
    const after = await payloads();
    raw.forEach((payload, i) =>
      expect({ i, archived: after.get(`raw_${String(i).padStart(2, '0')}`) }).toEqual({
        i,
        archived: archivableEmailPayload(payload),
      }),
    );
    expect(after.get('scrubbed')).toEqual(redacted);
    expect(after.get('billing')).toEqual(billing);

    // Running it again changes nothing.
    await migrate();
    expect(await payloads()).toEqual(after);
  });
});
