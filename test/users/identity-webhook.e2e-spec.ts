import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import type { User } from '../../src/generated/prisma/client.js';
import { MetricsService } from '../../src/infra/metrics/metrics.service.js';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import { JOBS } from '../../src/infra/queue/queues.js';
import { AccountDeletionService } from '../../src/modules/users/account-deletion.service.js';
import { UserHooks } from '../../src/modules/users/user-hooks.js';
import { UsersRepository } from '../../src/modules/users/users.repository.js';
import { WebhookInboxService } from '../../src/modules/webhooks/webhook-inbox.service.js';
import { fixture, type Json } from '../contracts/contract-support.js';
import { lockWaiters, waitForLockWaiters } from '../support/held-events.js';
import {
  identityDeletedEvent,
  identityUserEvent,
  type SignedDelivery,
  signIdentityEvent,
} from '../support/identity-webhook.js';
import { send as sendBilling, subscribe, subscriptionEvent } from '../support/billing.js';
import { holding } from '../support/lock-holder.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';
import { settled, withOutcome } from '../support/webhooks.js';

describe('POST /webhooks/identity', () => {
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;
  const signedUp: string[] = [];

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    worker = await env.startWorker();
    worker.get(UserHooks).on('signup', 'test-signup-recorder', async (user: User) => {
      signedUp.push(user.identityUserId);
    });
  });
  afterAll(() => env.close());

  /** Delivers and, when accepted, waits for the worker; `outcome` is what it made of the event. */
  const deliver = async (delivery: SignedDelivery, headers: Record<string, string> = {}) =>
    withOutcome(
      api,
      'identity',
      delivery.id,
      await api.http
        .post('/webhooks/identity')
        .set({ ...delivery.headers, ...headers })
        .send(delivery.body),
    );

  const stored = async () => ({
    users: await api.prisma.user.count(),
    archived: await api.prisma.webhookEvent.count(),
    processed: await api.prisma.processedWebhookEvent.count(),
    // The worker's welcome e-mails of earlier tests write email.* entries at their own pace.
    audit: await api.prisma.auditLog.count({ where: { NOT: { actor: 'system:email' } } }),
  });

  describe('signature verification', () => {
    const expectRefused = async (delivery: SignedDelivery, headers: Record<string, string> = {}) => {
      const before = await stored();
      const res = await deliver(delivery, headers);
      expect(res.status).toBe(401);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 401, code: 'invalid_signature' });
      expect(await stored()).toEqual(before);
    };

    it('accepts the webhook-* header set and creates the user', async () => {
      const delivery = signIdentityEvent(identityUserEvent('user.created', 'user_std', 'std@example.com'));
      const res = await deliver(delivery);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ received: true, event_id: delivery.id, status: 'accepted' });
      expect(res.outcome).toBe('processed');
      const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_std' } });
      // The primary address, not the first one in the list.
      expect(user.email).toBe('std@example.com');
    });

    it('accepts the svix-* header set', async () => {
      const delivery = signIdentityEvent(identityUserEvent('user.created', 'user_svix', 'svix@example.com'), {
        headerSet: 'svix',
      });
      expect((await deliver(delivery)).status).toBe(200);
      expect(await api.prisma.user.count({ where: { identityUserId: 'user_svix' } })).toBe(1);
    });

    it('accepts a signature list where one of several v1 entries matches (secret rotation)', async () => {
      const delivery = signIdentityEvent(identityUserEvent('user.created', 'user_rot', 'rot@example.com'));
      const other = signIdentityEvent(delivery.body, {
        id: delivery.id,
        secret: `whsec_${Buffer.from('an-older-secret-of-at-least-32-bytes!!').toString('base64')}`,
      });
      const res = await deliver(delivery, {
        'webhook-signature': `${other.headers['webhook-signature']} ${delivery.headers['webhook-signature']}`,
      });
      expect(res.status).toBe(200);
    });

    it('refuses a tampered body', async () => {
      const delivery = signIdentityEvent(identityUserEvent('user.created', 'user_tamper', 'a@example.com'));
      await expectRefused({ ...delivery, body: delivery.body.replace('a@example.com', 'b@example.com') });
      expect(await api.prisma.user.count({ where: { identityUserId: 'user_tamper' } })).toBe(0);
    });

    it('refuses a timestamp outside the 5-minute tolerance (old and future)', async () => {
      const event = identityUserEvent('user.created', 'user_late', 'late@example.com');
      await expectRefused(signIdentityEvent(event, { timestamp: new Date(Date.now() - 6 * 60_000) }));
      await expectRefused(signIdentityEvent(event, { timestamp: new Date(Date.now() + 6 * 60_000) }));
      // Inside the tolerance it passes.
      const res = await deliver(signIdentityEvent(event, { timestamp: new Date(Date.now() - 4 * 60_000) }));
      expect(res.status).toBe(200);
    });

    it('refuses a signature made with another secret', async () => {
      const wrong = `whsec_${Buffer.from('not-the-identity-webhook-secret-0123456789').toString('base64')}`;
      await expectRefused(
        signIdentityEvent(identityUserEvent('user.created', 'user_wrong', 'w@example.com'), {
          secret: wrong,
        }),
      );
    });

    it('refuses missing signature headers and a signature moved to another message id', async () => {
      const delivery = signIdentityEvent(identityUserEvent('user.created', 'user_nohdr', 'n@example.com'));
      const res = await api.http
        .post('/webhooks/identity')
        .set('content-type', 'application/json')
        .send(delivery.body);
      expect(res.status).toBe(401);
      await expectRefused(delivery, { 'webhook-id': 'msg_replayed_under_another_id' });
      await expectRefused(delivery, { 'webhook-signature': 'v2,abc' });
    });
  });

  it('treats a redelivery as a no-op: one user, one audit entry, one archive row', async () => {
    const delivery = signIdentityEvent(identityUserEvent('user.created', 'user_redeliver', 'r@example.com'));
    const first = await deliver(delivery);
    // Svix resends with the same message id (possibly a fresh timestamp and the other header names).
    const again = signIdentityEvent(delivery.body, { id: delivery.id, headerSet: 'svix' });
    const results = await Promise.all([deliver(again), deliver(again)]);
    expect(first.outcome).toBe('processed');
    expect(results.map((r) => r.outcome)).toEqual(['duplicate', 'duplicate']);
    expect(await api.prisma.user.count({ where: { identityUserId: 'user_redeliver' } })).toBe(1);
    expect(
      await api.prisma.auditLog.count({ where: { action: 'user.created', userId: 'user_redeliver' } }),
    ).toBe(1);
    const archive = await api.prisma.webhookEvent.findMany({ where: { eventId: delivery.id } });
    expect(archive).toHaveLength(1);
    expect(archive[0]).toMatchObject({
      provider: 'identity',
      eventType: 'user.created',
      status: 'PROCESSED',
    });
    // An allowlist of the body is archived, not the body (no metadata, names or phones).
    expect(archive[0].payload).toMatchObject({
      type: 'user.created',
      data: { id: 'user_redeliver', primary_email_address_id: 'idn_primary' },
    });
    expect(archive[0].payload).not.toHaveProperty('data.unsafe_metadata');
    expect(await api.prisma.processedWebhookEvent.count({ where: { eventId: delivery.id } })).toBe(1);
  });

  it('audits user.created as the webhook and runs the post-signup hooks once', async () => {
    await deliver(signIdentityEvent(identityUserEvent('user.created', 'user_hooks', 'h@example.com')));
    const [entry] = await api.prisma.auditLog.findMany({
      where: { action: 'user.created', userId: 'user_hooks' },
    });
    expect(entry).toMatchObject({ actor: 'webhook:identity', resourceType: 'user' });
    expect(entry.details).toEqual({ created_via: 'identity_webhook' });
    await waitFor(async () => signedUp.includes('user_hooks'));
    expect(signedUp.filter((id) => id === 'user_hooks')).toHaveLength(1);
  });

  describe('webhook and just-in-time creation race to one row', () => {
    const counts = async (sub: string) => ({
      users: await api.prisma.user.count({ where: { identityUserId: sub } }),
      audits: await api.prisma.auditLog.count({ where: { action: 'user.created', userId: sub } }),
    });

    it('webhook first, then the first API call', async () => {
      await deliver(signIdentityEvent(identityUserEvent('user.created', 'user_wh_first', 'whf@example.com')));
      const res = await api.http
        .get('/api/v1/me')
        .set('Authorization', await api.bearer('user_wh_first', 'whf@example.com'));
      expect(res.status).toBe(200);
      expect(await counts('user_wh_first')).toMatchObject({ users: 1, audits: 1 });
    });

    it('first API call (just in time), then the late webhook', async () => {
      const res = await api.http
        .get('/api/v1/me')
        .set('Authorization', await api.bearer('user_jit_first', 'jit@example.com'));
      expect(res.status).toBe(200);
      const late = await deliver(
        signIdentityEvent(identityUserEvent('user.created', 'user_jit_first', 'jit@example.com')),
      );
      expect(late.status).toBe(200);
      expect(late.outcome).toBe('skipped');
      expect(await counts('user_jit_first')).toMatchObject({ users: 1, audits: 1 });
      const [entry] = await api.prisma.auditLog.findMany({
        where: { action: 'user.created', userId: 'user_jit_first' },
      });
      expect(entry.details).toEqual({ created_via: 'token' });
    });

    it('both at the same moment', async () => {
      const authorization = await api.bearer('user_both', 'both@example.com');
      const delivery = signIdentityEvent(identityUserEvent('user.created', 'user_both', 'both@example.com'));
      const results = await Promise.all([
        deliver(delivery),
        api.http.get('/api/v1/me').set('Authorization', authorization),
        api.http.get('/api/v1/me').set('Authorization', authorization),
      ]);
      expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
      expect(await counts('user_both')).toMatchObject({ users: 1, audits: 1 });
      const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_both' } });
      expect(await api.prisma.outboxEntry.count({ where: { jobId: `post-signup-${user.id}` } })).toBe(1);
    });
  });

  it('user.updated syncs the primary e-mail and audits the change', async () => {
    await deliver(signIdentityEvent(identityUserEvent('user.created', 'user_upd', 'old@example.com')));
    const res = await deliver(
      signIdentityEvent(identityUserEvent('user.updated', 'user_upd', 'new@example.com')),
    );
    expect(res.outcome).toBe('processed');
    const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_upd' } });
    expect(user.email).toBe('new@example.com');
    const [entry] = await api.prisma.auditLog.findMany({
      where: { action: 'user.updated', userId: 'user_upd' },
    });
    expect(entry).toMatchObject({ actor: 'webhook:identity' });
    expect(entry.details).toEqual({ fields_changed: ['email'], via: 'identity_webhook' });
    // Same address again: nothing to do.
    const same = await deliver(
      signIdentityEvent(identityUserEvent('user.updated', 'user_upd', 'new@example.com')),
    );
    expect(same.outcome).toBe('skipped');
    expect(await api.prisma.auditLog.count({ where: { action: 'user.updated', userId: 'user_upd' } })).toBe(
      1,
    );
  });

  it('user.updated that overtakes user.created creates the user with the newer address', async () => {
    await deliver(
      signIdentityEvent(identityUserEvent('user.updated', 'user_early_upd', 'newer@example.com')),
    );
    const late = await deliver(
      signIdentityEvent(identityUserEvent('user.created', 'user_early_upd', 'older@example.com')),
    );
    expect(late.outcome).toBe('skipped');
    const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_early_upd' } });
    expect(user.email).toBe('newer@example.com');
  });

  it('user.deleted starts the soft delete, once', async () => {
    await deliver(signIdentityEvent(identityUserEvent('user.created', 'user_del', 'del@example.com')));
    const res = await deliver(signIdentityEvent(identityDeletedEvent('user_del')));
    expect(res.outcome).toBe('processed');
    const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_del' } });
    expect(user.deletedAt).not.toBeNull();
    const [entry] = await api.prisma.auditLog.findMany({
      where: { action: 'user.deletion_requested', userId: 'user_del' },
    });
    expect(entry).toMatchObject({ actor: 'webhook:identity' });
    expect(entry.details).toMatchObject({ via: 'identity_webhook' });
    expect(
      await api.prisma.outboxEntry.count({
        where: { jobName: 'account-deletion-requested', jobId: { contains: user.id } },
      }),
    ).toBe(1);
    const again = await deliver(signIdentityEvent(identityDeletedEvent('user_del')));
    expect(again.outcome).toBe('skipped');
    expect(
      (await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_del' } })).deletedAt,
    ).toEqual(user.deletedAt);
    const unknown = await deliver(signIdentityEvent(identityDeletedEvent('user_never_seen')));
    expect(unknown.outcome).toBe('skipped');
  });

  describe('user.deleted delivered before a user.created or user.updated of the same identity user', () => {
    type ClerkEvent = { type: string; timestamp: number; data: Json & { id: string; updated_at?: number } };
    /** Clerk's published example, pointed at `identityUserId` (the published events name two users). */
    const clerk = (name: 'user.created' | 'user.updated' | 'user.deleted', identityUserId: string) => {
      const event = fixture<ClerkEvent>('clerk', name);
      event.data.id = identityUserId;
      return event;
    };
    const STALE = 'stale event: not newer than the identity provider deleting the user';
    const archived = (delivery: SignedDelivery) =>
      api.prisma.webhookEvent.findFirstOrThrow({ where: { provider: 'identity', eventId: delivery.id } });
    const created = async (identityUserId: string) => ({
      users: await api.prisma.user.count({ where: { identityUserId } }),
      audits: await api.prisma.auditLog.count({ where: { action: 'user.created', userId: identityUserId } }),
    });

    // The published story: created 2022-05-31, updated minutes later, deleted 2022-08-30. Svix retried the
    // earlier events after the deletion had been delivered.
    it.each(['user.created', 'user.updated'] as const)(
      'a late %s older than the deletion creates no account and sends no welcome e-mail',
      async (type) => {
        const sub = `user_ghost_${type.slice(5)}`;
        const deleted = await deliver(signIdentityEvent(clerk('user.deleted', sub), { headerSet: 'svix' }));
        expect(deleted.outcome).toBe('skipped');

        const signups = () => api.prisma.outboxEntry.count({ where: { jobName: JOBS.postSignup.name } });
        const before = await signups();
        const late = signIdentityEvent(clerk(type, sub), { headerSet: 'svix' });
        const res = await deliver(late);
        expect(res.status).toBe(200);
        expect(res.outcome).toBe('skipped');
        expect(await archived(late)).toMatchObject({ status: 'SKIPPED', error: STALE });
        expect(await created(sub)).toEqual({ users: 0, audits: 0 });
        // The welcome e-mail is a post-signup hook, enqueued with the row: none was.
        expect(await signups()).toBe(before);
        expect(signedUp).not.toContain(sub);
      },
    );

    it('a user.created newer than the deletion is a new sign-up, as after an erasure', async () => {
      const sub = 'user_ghost_newer';
      await deliver(signIdentityEvent(clerk('user.deleted', sub), { headerSet: 'svix' }));
      const event = clerk('user.created', sub);
      event.timestamp = Date.now();
      event.data.updated_at = event.timestamp;
      const res = await deliver(signIdentityEvent(event, { headerSet: 'svix' }));
      expect(res.outcome).toBe('processed');
      const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: sub } });
      expect(user.deletedAt).toBeNull();
      expect(await created(sub)).toEqual({ users: 1, audits: 1 });
      await waitFor(async () => signedUp.includes(sub));
    });

    it('the erasure keeps the deletion: a late user.created does not bring the erased account back', async () => {
      const sub = 'user_ghost_erased';
      expect(
        (await deliver(signIdentityEvent(clerk('user.created', sub), { headerSet: 'svix' }))).outcome,
      ).toBe('processed');
      const deletion = signIdentityEvent(clerk('user.deleted', sub), { headerSet: 'svix' });
      expect((await deliver(deletion)).outcome).toBe('processed');
      // The grace period has passed: the daily job erases the account.
      await api.prisma.user.update({
        where: { identityUserId: sub },
        data: { deletedAt: new Date(Date.now() - 31 * 86_400_000) },
      });
      expect((await worker.get(AccountDeletionService).hardDeleteDue()).deleted).toBe(1);
      // The deletion's archive row keeps the identity id alone.
      expect((await archived(deletion)).payload).toEqual({
        redacted: true,
        type: 'user.deleted',
        data: { id: sub },
      });

      const late = signIdentityEvent(clerk('user.created', sub), { headerSet: 'svix' });
      expect((await deliver(late)).outcome).toBe('skipped');
      expect(await archived(late)).toMatchObject({ status: 'SKIPPED', error: STALE });
      expect(await api.prisma.user.count({ where: { identityUserId: sub } })).toBe(0);
    });

    describe('the just-in-time path asks the same guard, by the token issue time (iat)', () => {
      /** A real RS256 token of the test identity provider, issued `secondsAgo` before now. */
      const tokenIssued = async (sub: string, secondsAgo: number) =>
        `Bearer ${await env.idp.token({ sub, email: `${sub}@example.com` }, { issuedAt: -secondsAgo, expiresIn: 600 })}`;
      const me = (authorization: string) => api.http.get('/api/v1/me').set('Authorization', authorization);
      /** Clerk's user.deleted of `sub`, sent by the provider `secondsAgo` before now. */
      const deletedAgo = (sub: string, secondsAgo: number) => {
        const event = clerk('user.deleted', sub);
        event.timestamp = Date.now() - secondsAgo * 1000;
        return signIdentityEvent(event, { headerSet: 'svix' });
      };

      it('a token issued before the deletion of a user we never saw creates no account; a later one signs up', async () => {
        const sub = 'user_ghost_token';
        const before = await tokenIssued(sub, 120);
        // The provider deleted the user a minute ago; we never saw it (user.created is still being retried).
        expect((await deliver(deletedAgo(sub, 60))).outcome).toBe('skipped');

        const refused = await me(before);
        expect(refused.status).toBe(401);
        expect(refused.headers['content-type']).toMatch(/application\/problem\+json/);
        expect(refused.body).toMatchObject({ status: 401, code: 'unknown_user' });
        expect(await created(sub)).toEqual({ users: 0, audits: 0 });
        expect(signedUp).not.toContain(sub);

        // A token issued after the deletion is newer than it: a new sign-up, as for the webhook.
        expect((await me(await tokenIssued(sub, 0))).status).toBe(200);
        expect(await created(sub)).toEqual({ users: 1, audits: 1 });
      });

      it('the erasure keeps the deletion: a token issued before it does not bring the erased account back', async () => {
        const sub = 'user_ghost_token_erased';
        const before = await tokenIssued(sub, 120);
        expect((await me(before)).status).toBe(200);
        expect(await created(sub)).toEqual({ users: 1, audits: 1 });
        expect((await deliver(deletedAgo(sub, 60))).outcome).toBe('processed');
        // Soft-deleted: the row is there (GET /me stays open to it), so no just-in-time path yet.
        expect((await me(before)).body.deleted_at).not.toBeNull();
        await api.prisma.user.update({
          where: { identityUserId: sub },
          data: { deletedAt: new Date(Date.now() - 31 * 86_400_000) },
        });
        expect((await worker.get(AccountDeletionService).hardDeleteDue()).deleted).toBe(1);

        const refused = await me(before);
        expect(refused.status).toBe(401);
        expect(refused.body).toMatchObject({ code: 'unknown_user' });
        expect(await api.prisma.user.count({ where: { identityUserId: sub } })).toBe(0);
      });

      it('a user.deleted applied while a just-in-time creation is still open waits for it and deletes the account', async () => {
        const sub = 'user_jit_race';
        const gateKey = `test-gate:${sub}`;
        // The just-in-time transaction stops at its user.created audit entry (after the guard read the
        // archive and the row was inserted, before the commit) until the test opens the gate.
        await api.prisma.$executeRawUnsafe(`
          CREATE FUNCTION test_hold_jit() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            IF NEW.action = 'user.created' AND NEW.user_id = '${sub}' THEN
              PERFORM pg_advisory_xact_lock_shared(hashtextextended('${gateKey}', 0));
            END IF;
            RETURN NEW;
          END $$`);
        await api.prisma.$executeRawUnsafe(
          `CREATE TRIGGER test_hold_jit BEFORE INSERT ON audit_logs FOR EACH ROW EXECUTE FUNCTION test_hold_jit()`,
        );
        const gate = await holding(
          api.prisma,
          (tx) => tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${gateKey}, 0))`,
        );
        try {
          // A token issued before the deletion, whose guard read found no deletion yet.
          const signIn = me(await tokenIssued(sub, 120)).then((res) => res);
          await waitForLockWaiters(api.prisma, gateKey);
          const deletion = deletedAgo(sub, 60);
          const accepted = await api.http
            .post('/webhooks/identity')
            .set(deletion.headers)
            .send(deletion.body);
          expect(accepted.body).toMatchObject({ status: 'accepted' });
          // The worker has reached the event: it applied it without seeing the uncommitted row (the race), or
          // it waits for the identity's lock, which the just-in-time transaction holds until its commit.
          await waitFor(
            async () =>
              (await archived(deletion)).status !== 'RECEIVED' ||
              (await lockWaiters(api.prisma, `identity-user:${sub}`)) > 0,
            // Within the API's statement timeout, which ends the held insert.
            12_000,
          );
          gate.release();
          await gate.done;
          expect((await signIn).status).toBe(200);
          expect(await settled(api, 'identity', deletion.id)).toMatchObject({ status: 'PROCESSED' });
          expect(await api.prisma.user.findUnique({ where: { identityUserId: sub } })).toMatchObject({
            deletedAt: expect.any(Date),
            deletedVia: 'identity_webhook',
          });
        } finally {
          gate.release();
          await gate.done;
          await api.prisma.$executeRawUnsafe(`DROP TRIGGER test_hold_jit ON audit_logs`);
          await api.prisma.$executeRawUnsafe(`DROP FUNCTION test_hold_jit()`);
        }
      });
    });
  });

  it("applies a batch of identity events taking the identities' locks in one order, never one while waiting for another", async () => {
    // Two identities, named so that the batch lists the one with the larger lock key first.
    const key = (sub: string) => `identity-user:${sub}`;
    const [{ first_is_larger }] = await api.prisma.$queryRaw<{ first_is_larger: boolean }[]>`
      SELECT hashtextextended(${key('user_order_a')}, 0) > hashtextextended(${key('user_order_b')}, 0)
        AS first_is_larger`;
    const [larger, smaller] = first_is_larger
      ? ['user_order_a', 'user_order_b']
      : ['user_order_b', 'user_order_a'];
    const deliveries = [larger, smaller].map((sub) =>
      signIdentityEvent(identityUserEvent('user.created', sub, `${sub}@example.com`)),
    );
    const queue = worker.get(QueueService).queue(JOBS.applyWebhooks.queue);
    await queue.pause();
    // A just-in-time creation of the smaller one holds its lock.
    const jit = await holding(api.prisma, (tx) => worker.get(UsersRepository).lockIdentity(tx, smaller));
    let batch: Promise<unknown> | undefined;
    try {
      const ids: string[] = [];
      for (const delivery of deliveries) {
        const res = await api.http.post('/webhooks/identity').set(delivery.headers).send(delivery.body);
        expect(res.body).toMatchObject({ status: 'accepted' });
        const row = await api.prisma.webhookEvent.findFirstOrThrow({
          where: { provider: 'identity', eventId: delivery.id },
        });
        ids.push(row.id);
      }
      // One batch, larger first: its handlers alone would lock the larger identity, then wait for the smaller.
      batch = worker.get(WebhookInboxService).applyMany(ids, false);
      await waitForLockWaiters(api.prisma, key(smaller));
      const [{ free }] = await api.prisma.$queryRaw<{ free: boolean }[]>`
        SELECT pg_try_advisory_xact_lock(hashtextextended(${key(larger)}, 0)) AS free`;
      expect(free).toBe(true);
    } finally {
      jit.release();
      await jit.done;
      await batch;
      await queue.resume();
    }
    for (const delivery of deliveries)
      expect(await settled(api, 'identity', delivery.id)).toMatchObject({ status: 'PROCESSED' });
    expect(await api.prisma.user.count({ where: { identityUserId: { in: [larger, smaller] } } })).toBe(2);
  });

  it("runs a mixed batch's identity locks before billing's row locks, whatever order its events arrived in", async () => {
    // Ada has a subscription; a billing event and an identity update about her arrive, billing first.
    const { user, subId } = await subscribe(api);
    const key = `identity-user:${user.identityUserId}`;
    const renewal = subscriptionEvent({ type: 'subscription.updated', subId, occurredAt: new Date() });
    const rename = signIdentityEvent(
      identityUserEvent('user.updated', user.identityUserId, `renamed-${user.email}`, {
        updatedAt: Date.now(),
      }),
    );
    const queue = worker.get(QueueService).queue(JOBS.applyWebhooks.queue);
    await queue.pause();
    // Another batch (or a just-in-time creation) holds Ada's identity lock.
    const other = await holding(api.prisma, (tx) =>
      worker.get(UsersRepository).lockIdentity(tx, user.identityUserId),
    );
    let batch: Promise<unknown> | undefined;
    try {
      expect((await sendBilling(api, renewal)).body).toMatchObject({ status: 'accepted' });
      const res = await api.http.post('/webhooks/identity').set(rename.headers).send(rename.body);
      expect(res.body).toMatchObject({ status: 'accepted' });
      const ids = await Promise.all(
        [
          { provider: 'billing', eventId: renewal.event_id },
          { provider: 'identity', eventId: rename.id },
        ].map(
          async (where) =>
            (await api.prisma.webhookEvent.findFirstOrThrow({ where, select: { id: true } })).id,
        ),
      );
      batch = worker.get(WebhookInboxService).applyMany(ids, false);
      await waitForLockWaiters(api.prisma, key);
      // Waiting for the identity's lock, the batch holds no lock on Ada's row (billing's preparer takes it),
      // so the holder of the identity's lock could take it: no deadlock.
      const free = await api.prisma.$queryRaw<{ id: string }[]>`
        SELECT id FROM users WHERE id = ${user.id}::uuid FOR UPDATE SKIP LOCKED`;
      expect(free).toHaveLength(1);
    } finally {
      other.release();
      await other.done;
      await batch;
      await queue.resume();
    }
    expect(await settled(api, 'billing', renewal.event_id)).toMatchObject({ status: 'PROCESSED' });
    expect(await settled(api, 'identity', rename.id)).toMatchObject({ status: 'PROCESSED' });
    expect((await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).email).toBe(
      `renamed-${user.email}`,
    );
  });

  it('archives and acknowledges other event types without effect', async () => {
    const delivery = signIdentityEvent({ type: 'session.created', object: 'event', data: { id: 'sess_1' } });
    const res = await deliver(delivery);
    expect(res.status).toBe(200);
    expect(res.outcome).toBe('skipped');
    const archived = await api.prisma.webhookEvent.findFirstOrThrow({ where: { eventId: delivery.id } });
    expect(archived).toMatchObject({ status: 'SKIPPED', eventType: 'session.created' });
  });

  it('answers 400 to a signed but malformed event, archived as FAILED with webhook.failed', async () => {
    const delivery = signIdentityEvent({
      type: 'user.created',
      data: { id: 'user_malformed', email_addresses: [{ id: 'idn_1', email_address: 'not-an-email' }] },
    });
    const res = await deliver(delivery);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'invalid_payload' });
    expect(await api.prisma.user.count({ where: { identityUserId: 'user_malformed' } })).toBe(0);
    const archived = await api.prisma.webhookEvent.findFirstOrThrow({ where: { eventId: delivery.id } });
    expect(archived.status).toBe('FAILED');
    expect(await api.prisma.processedWebhookEvent.count({ where: { eventId: delivery.id } })).toBe(0);
    const failed = await api.prisma.auditLog.findFirstOrThrow({
      where: { action: 'webhook.failed', resourceId: delivery.id },
    });
    expect(failed.details).toMatchObject({ provider: 'identity', event_type: 'user.created' });
    // A body without a type at all is malformed too.
    const noType = await deliver(signIdentityEvent({ data: {} }));
    expect(noType.status).toBe(400);
  });

  it('leaves a trace of every refused delivery: counted and logged by reason, audited when authentic', async () => {
    const metrics = api.app.get(MetricsService);
    const count = async (reason: string) =>
      (await metrics.webhookRefusals.get()).values.find(
        (v) => v.labels.provider === 'identity' && v.labels.reason === reason,
      )?.value ?? 0;
    const before = { signature: await count('invalid_signature'), unstorable: await count('unstorable') };

    const forged = signIdentityEvent(identityUserEvent('user.created', 'user_forged', 'forged@example.com'), {
      secret: 'whsec_' + Buffer.from('another-secret-of-32-bytes-00000').toString('base64'),
    });
    expect((await deliver(forged)).status).toBe(401);
    expect(await count('invalid_signature')).toBe(before.signature + 1);
    expect(env.logs.lines.some((l) => l.includes('identity webhook refused: invalid_signature'))).toBe(true);
    expect(await api.prisma.auditLog.count({ where: { resourceId: forged.id } })).toBe(0);

    // Authentic, but jsonb cannot hold it (a NUL character): not archived, so audited with the body digest.
    const nul = signIdentityEvent('{"type":"user.created","data":{"id":"user_\\u0000"}}');
    expect((await deliver(nul)).status).toBe(400);
    expect(await count('unstorable')).toBe(before.unstorable + 1);
    const [entry] = await api.prisma.auditLog.findMany({
      where: { action: 'webhook.failed', resourceId: nul.id },
    });
    expect(entry.details).toEqual({
      provider: 'identity',
      reason: 'unstorable',
      event_id: nul.id,
      body_digest: `sha256:${createHash('sha256').update(nul.body).digest('hex')}`,
    });
  });
});
