import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';
import { fixture, type Json, standardWebhookHeaders, svixSecret } from './contract-support.js';

type ClerkEvent = { type: string; data: Json & { id: string } };

/**
 * Clerk's published user.* examples, signed as Svix signs them (Standard Webhooks), with the 24-byte
 * `whsec_` secrets Svix generates, through both header sets and a secret rotation.
 */
describe('contract: Clerk user.* webhooks (Svix / Standard Webhooks)', () => {
  let env: TestEnv;
  let api: ApiApp;
  const current = svixSecret();
  const previous = svixSecret();
  const CLERK_USER = 'user_29w83sxmDNGwOuEthce5gg56FcC';
  const PRIVATE = ['first_name', 'last_name', 'phone_numbers', 'image_url', 'profile_image_url', 'birthday'];

  beforeAll(async () => {
    env = await TestEnv.create({
      env: { IDENTITY_WEBHOOK_SECRET: current, IDENTITY_WEBHOOK_SECRET_PREVIOUS: previous },
    });
    api = await env.startApi();
    // Accepted webhooks are applied by the worker.
    await env.startWorker();
  });
  afterAll(() => env.close());

  /**
   * POSTs a signed delivery; an accepted one is awaited until its archive row is settled, so effects are
   * read after processing whether it runs in the request or in the worker. No assertion on `status`
   * beyond `received` (the asynchronous pipeline changes that answer).
   */
  const post = async (body: string, headers: Record<string, string>) => {
    const res = await api.http.post('/webhooks/identity').set(headers).send(body);
    const id = headers['svix-id'] ?? headers['webhook-id'];
    if (res.status === 200) {
      await waitFor(async () => {
        const row = await api.prisma.webhookEvent.findUnique({
          where: { provider_eventId: { provider: 'identity', eventId: id } },
        });
        return row !== null && row.status !== 'RECEIVED';
      }, 10_000);
    }
    return res;
  };
  const archiveOf = (messageId: string) =>
    api.prisma.webhookEvent.findUniqueOrThrow({
      where: { provider_eventId: { provider: 'identity', eventId: messageId } },
    });

  /** Nothing in the archive row that names or reaches the person. */
  function expectNoPersonalData(payload: unknown, event: ClerkEvent) {
    const data = (payload as { data: Json }).data;
    for (const field of PRIVATE) expect({ field, kept: field in data }).toEqual({ field, kept: false });
    const text = JSON.stringify(payload);
    for (const value of ['img.clerk.com', 'gravatar.com', '"Example"', '0.0.0.0'])
      expect({ value, found: text.includes(value) }).toEqual({ value, found: false });
    expect(event.data.first_name).toBe('Example'); // the fixture did carry them
  }

  it('user.created (svix-* headers) creates the user; the archive keeps no name, phone or image', async () => {
    const event = fixture<ClerkEvent>('clerk', 'user.created');
    const body = JSON.stringify(event);
    const headers = standardWebhookHeaders(body, [current], { headerSet: 'svix' });
    const res = await post(body, headers);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ received: true });

    const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: CLERK_USER } });
    expect(user.email).toBe('example@example.org');
    expect(
      await api.prisma.auditLog.count({ where: { action: 'user.created', userId: CLERK_USER } }),
    ).toBeGreaterThanOrEqual(1);
    const archive = await archiveOf(headers['svix-id']);
    expect(archive).toMatchObject({ provider: 'identity', eventType: 'user.created', status: 'PROCESSED' });
    expect(archive.payload).toMatchObject({
      type: 'user.created',
      data: {
        id: CLERK_USER,
        primary_email_address_id: 'idn_29w83yL7CwVlJXylYLxcslromF1',
        email_addresses: [{ email_address: 'example@example.org', verification: { status: 'verified' } }],
      },
    });
    expectNoPersonalData(archive.payload, event);
  });

  it('user.updated (webhook-* headers, signed with the old and the new secret during a rotation) syncs the e-mail', async () => {
    const event = fixture<ClerkEvent>('clerk', 'user.updated');
    // Changed to show the sync: the published example keeps the address of user.created.
    const addresses = event.data.email_addresses as { email_address: string }[];
    addresses[0].email_address = 'renamed@example.org';
    const body = JSON.stringify(event);
    const unknown = svixSecret();
    const headers = standardWebhookHeaders(body, [unknown, current], { headerSet: 'webhook' });
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    const res = await post(body, headers);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ received: true });
    expect((await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: CLERK_USER } })).email).toBe(
      'renamed@example.org',
    );
    expectNoPersonalData((await archiveOf(headers['webhook-id'])).payload, event);
  });

  it('accepts a delivery signed only with the previous secret, and refuses one signed with neither', async () => {
    const event = fixture<ClerkEvent>('clerk', 'user.updated');
    const body = JSON.stringify(event);
    const old = standardWebhookHeaders(body, [previous], { headerSet: 'svix' });
    expect((await post(body, old)).status).toBe(200);
    expect((await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: CLERK_USER } })).email).toBe(
      'example@example.org',
    );

    const forged = standardWebhookHeaders(body, [svixSecret()], { headerSet: 'svix' });
    expect((await post(body, forged)).status).toBe(401);
    expect(
      await api.prisma.webhookEvent.count({ where: { provider: 'identity', eventId: forged['svix-id'] } }),
    ).toBe(0);
  });

  it('user.deleted starts the soft delete of that user', async () => {
    const event = fixture<ClerkEvent>('clerk', 'user.deleted');
    // Changed: the published example deletes another user id; it is pointed at the user created above.
    event.data.id = CLERK_USER;
    const body = JSON.stringify(event);
    const headers = standardWebhookHeaders(body, [current], { headerSet: 'svix' });
    const res = await post(body, headers);
    expect(res.status).toBe(200);
    const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: CLERK_USER } });
    expect(user.deletedAt).not.toBeNull();
    expect((await archiveOf(headers['svix-id'])).payload).toEqual({
      type: 'user.deleted',
      object: 'event',
      timestamp: 1661861640000,
      data: { id: CLERK_USER, object: 'user', deleted: true },
    });
  });
});
