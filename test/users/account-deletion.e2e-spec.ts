import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import pg from 'pg';
import type { User } from '../../src/generated/prisma/client.js';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import { JOBS } from '../../src/infra/queue/queues.js';
import { EmailService } from '../../src/modules/email/email.service.js';
import { AccountDeletionService } from '../../src/modules/users/account-deletion.service.js';
import { UserHooks } from '../../src/modules/users/user-hooks.js';
import { SCRUB_EMAIL_ARCHIVE_SQL } from '../../src/modules/webhooks/webhook-inbox.repository.js';
import { JobScheduler } from '../../src/infra/queue/job-scheduler.js';
import { type SeededUser, seedUserWithEverything } from '../factories/user-data.factory.js';
import { deliverEmailEvent, resendEvent, signEmailEvent } from '../support/email-webhook.js';
import {
  deliverIdentity,
  identityDeletedEvent,
  identityUserEvent,
  signIdentityEvent,
} from '../support/identity-webhook.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';
import { settled } from '../support/webhooks.js';

const DAY_MS = 86_400_000;
const daysAgo = (days: number) => new Date(Date.now() - days * DAY_MS);

describe('account deletion: soft delete, restore, hard delete', () => {
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;
  let deletion: AccountDeletionService;
  const deletionHookCalls: string[] = [];

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    worker = await env.startWorker();
    deletion = worker.get(AccountDeletionService);
    // Stands in for Billing's hook that cancels the subscription at the provider.
    worker.get(UserHooks).on('deletion_requested', 'test-deletion-recorder', async (user: User) => {
      deletionHookCalls.push(user.identityUserId);
    });
  });
  afterAll(() => env.close());

  const auth = (sub: string) => api.bearer(sub, `${sub}@example.com`);

  describe('DELETE /account/me and restore', () => {
    it('soft-deletes with a 30-day grace period and audits it', async () => {
      const authorization = await auth('user_quit');
      const res = await api.http.delete('/api/v1/account/me').set('Authorization', authorization);
      expect(res.status).toBe(202);
      expect(Object.keys(res.body).sort()).toEqual(['deleted_at', 'hard_delete_after']);
      const deletedAt = Date.parse(res.body.deleted_at);
      expect(Date.parse(res.body.hard_delete_after) - deletedAt).toBe(30 * DAY_MS);
      const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_quit' } });
      expect(user.deletedAt?.getTime()).toBe(deletedAt);
      const [entry] = await api.prisma.auditLog.findMany({
        where: { action: 'user.deletion_requested', userId: 'user_quit' },
      });
      expect(entry).toMatchObject({ actor: 'user:user_quit', resourceType: 'user', resourceId: user.id });
      expect(entry.details).toMatchObject({ via: 'api', hard_delete_after: res.body.hard_delete_after });
    });

    it('runs the deletion_requested hooks once in the worker', async () => {
      await waitFor(async () => deletionHookCalls.includes('user_quit'));
      expect(deletionHookCalls.filter((id) => id === 'user_quit')).toHaveLength(1);
    });

    it('refuses a soft-deleted user everywhere except /me, the export and restore', async () => {
      const authorization = await auth('user_quit');
      const refused = [
        api.http.patch('/api/v1/me').send({ locale: 'fr' }),
        api.http.post('/api/v1/account/me/signup-metadata').send({ utm_source: 'x' }),
        api.http.post('/api/v1/feedback').send({ message: 'bye' }),
        api.http.delete('/api/v1/account/me'),
      ];
      for (const req of refused) {
        const res = await req.set('Authorization', authorization);
        expect(res.status).toBe(403);
        expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
        expect(res.body).toMatchObject({ status: 403, code: 'account_deleted' });
      }
      const me = await api.http.get('/api/v1/me').set('Authorization', authorization);
      expect(me.status).toBe(200);
      expect(me.body.deleted_at).not.toBeNull();
      expect(me.body.hard_delete_after).not.toBeNull();
      const exported = await api.http.get('/api/v1/account/me/export').set('Authorization', authorization);
      expect(exported.status).toBe(200);
    });

    it('restores within the grace period and audits it', async () => {
      const authorization = await auth('user_quit');
      const res = await api.http.post('/api/v1/account/me/restore').set('Authorization', authorization);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        identity_user_id: 'user_quit',
        deleted_at: null,
        hard_delete_after: null,
      });
      expect(
        await api.prisma.auditLog.count({ where: { action: 'user.restored', userId: 'user_quit' } }),
      ).toBe(1);
      const patched = await api.http
        .patch('/api/v1/me')
        .set('Authorization', authorization)
        .send({ locale: 'fr' });
      expect(patched.status).toBe(200);
      // Restoring an active account is a harmless no-op.
      const again = await api.http.post('/api/v1/account/me/restore').set('Authorization', authorization);
      expect(again.status).toBe(200);
      expect(
        await api.prisma.auditLog.count({ where: { action: 'user.restored', userId: 'user_quit' } }),
      ).toBe(1);
    });

    it('skips the hooks of a deletion that was restored before its job ran', async () => {
      const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_quit' } });
      const queue = worker.get(QueueService).queue(JOBS.accountDeletionRequested.queue);
      const job = await queue.add(
        JOBS.accountDeletionRequested.name,
        { userId: user.id, deletedAt: daysAgo(1).toISOString() },
        { jobId: `stale-deletion-${user.id}` },
      );
      const done = await waitFor(async () => {
        const current = await queue.getJob(job.id!);
        return current?.finishedOn ? current : null;
      });
      expect(done.returnvalue).toEqual({ skipped: true });
      expect(deletionHookCalls.filter((id) => id === 'user_quit')).toHaveLength(1);
    });

    it('refuses a restore once the grace period is over', async () => {
      const authorization = await auth('user_too_late');
      expect((await api.http.get('/api/v1/me').set('Authorization', authorization)).status).toBe(200);
      await api.prisma.user.update({
        where: { identityUserId: 'user_too_late' },
        data: { deletedAt: daysAgo(31) },
      });
      const res = await api.http.post('/api/v1/account/me/restore').set('Authorization', authorization);
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({ code: 'restore_window_closed' });
      const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_too_late' } });
      expect(user.deletedAt).not.toBeNull();
    });
  });

  describe('API keys cannot delete, restore or export the account', () => {
    const ROUTES = [
      ['DELETE /account/me', (a: string) => api.http.delete('/api/v1/account/me').set('Authorization', a)],
      [
        'POST /account/me/restore',
        (a: string) => api.http.post('/api/v1/account/me/restore').set('Authorization', a),
      ],
      [
        'GET /account/me/export',
        (a: string) => api.http.get('/api/v1/account/me/export').set('Authorization', a),
      ],
    ] as const;

    /** The account's state and everything these routes would write, to show the refusals change nothing. */
    const state = async (sub: string) => ({
      deletedAt: (await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: sub } })).deletedAt,
      // What these routes audit (other entries, e.g. the welcome e-mail's, arrive from the worker).
      audit: await api.prisma.auditLog.count({
        where: { userId: sub, action: { in: ['user.deletion_requested', 'user.restored', 'user.exported'] } },
      }),
      outbox: await api.prisma.outboxEntry.count({ where: { jobName: JOBS.accountDeletionRequested.name } }),
    });

    const expectKeyRefused = async (sub: string, key: string) => {
      const before = await state(sub);
      for (const [route, send] of ROUTES) {
        const res = await send(key);
        expect({ route, status: res.status, type: res.headers['content-type'], code: res.body.code }).toEqual(
          {
            route,
            status: 403,
            type: expect.stringMatching(/^application\/problem\+json/),
            code: 'api_key_not_allowed',
          },
        );
      }
      expect(await state(sub)).toEqual(before);
    };

    const keyFor = async (sub: string) => {
      const res = await api.http
        .post('/api/v1/api_keys')
        .set('Authorization', await auth(sub))
        .send({ name: 'integration' });
      expect(res.status).toBe(201);
      return `Bearer ${res.body.secret as string}`;
    };

    it('refuses a key of a live account with 403 api_key_not_allowed and changes nothing', async () => {
      const key = await keyFor('user_key_live');
      // The key itself works: the refusal is about these routes.
      expect((await api.http.get('/api/v1/me').set('Authorization', key)).status).toBe(200);
      await expectKeyRefused('user_key_live', key);
      expect((await state('user_key_live')).deletedAt).toBeNull();
    });

    it('refuses a key after the identity provider deleted the user, so the key cannot undo it', async () => {
      const key = await keyFor('user_key_erased');
      const delivery = signIdentityEvent(identityDeletedEvent('user_key_erased'));
      const webhook = await deliverIdentity(api, delivery);
      expect(webhook.outcome).toBe('processed');
      const deleted = await state('user_key_erased');
      expect(deleted.deletedAt).not.toBeNull();
      // Still a valid credential where soft-deleted users may go (GET /me), yet no restore and no export.
      expect((await api.http.get('/api/v1/me').set('Authorization', key)).status).toBe(200);
      await expectKeyRefused('user_key_erased', key);
      expect((await state('user_key_erased')).deletedAt).toEqual(deleted.deletedAt);
      // An interactive sign-in may still export, but not undo the provider's deletion either (a token
      // issued before the deletion is still valid for a while).
      const jwt = await auth('user_key_erased');
      expect((await api.http.get('/api/v1/account/me/export').set('Authorization', jwt)).status).toBe(200);
      const restore = await api.http.post('/api/v1/account/me/restore').set('Authorization', jwt);
      expect({ status: restore.status, code: restore.body.code }).toEqual({
        status: 409,
        code: 'deleted_by_identity_provider',
      });
      expect((await state('user_key_erased')).deletedAt).toEqual(deleted.deletedAt);
    });
  });

  describe('hard delete', () => {
    const softDelete = (user: User, at: Date) =>
      api.prisma.user.update({ where: { id: user.id }, data: { deletedAt: at } });

    // Each test runs alone: no soft-deleted user of an earlier test (some are past their grace period) is
    // left for the job, so every count below is exactly the test's own users.
    beforeEach(async () => {
      await api.prisma.user.updateMany({ where: { deletedAt: { not: null } }, data: { deletedAt: null } });
    });

    it('applies every erasure rule: owned rows go, kept rows lose their user link, audit first', async () => {
      const gone = await seedUserWithEverything(api.prisma, 'user_erased');
      const inGrace = await seedUserWithEverything(api.prisma, 'user_in_grace');
      const active = await seedUserWithEverything(api.prisma, 'user_active');
      await expectSeededEverywhere(gone);
      await softDelete(gone.user, daysAgo(31));
      await softDelete(inGrace.user, daysAgo(29));
      const archive = (sub: string, id: string) =>
        api.prisma.webhookEvent.create({
          data: {
            provider: 'identity',
            eventId: id,
            eventType: 'user.created',
            payload: {
              type: 'user.created',
              data: { id: sub, email_addresses: [{ email_address: `${sub}@example.com` }] },
            },
            status: 'PROCESSED',
          },
        });
      await archive('user_erased', 'msg_erased');
      await archive('user_active', 'msg_active');

      // A witness of the order: at the moment the users row is deleted, how many user.hard_deleted entries
      // for it exist (seen from inside the deleting transaction).
      await api.prisma.$executeRawUnsafe('CREATE TABLE delete_witness (user_id uuid, audited int)');
      await api.prisma.$executeRawUnsafe(`
        CREATE FUNCTION witness_delete() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          INSERT INTO delete_witness SELECT OLD.id, count(*)::int FROM audit_logs
            WHERE action = 'user.hard_deleted' AND resource_id = OLD.id::text;
          RETURN OLD;
        END $$`);
      await api.prisma.$executeRawUnsafe(
        'CREATE TRIGGER witness_delete BEFORE DELETE ON users FOR EACH ROW EXECUTE FUNCTION witness_delete()',
      );
      let witnessed: { user_id: string; audited: number }[];
      try {
        const run = await deletion.hardDeleteDue();
        expect(run.deleted).toBe(1);
        witnessed = await api.prisma.$queryRawUnsafe('SELECT user_id::text, audited FROM delete_witness');
      } finally {
        await api.prisma.$executeRawUnsafe('DROP TRIGGER witness_delete ON users');
        await api.prisma.$executeRawUnsafe('DROP FUNCTION witness_delete()');
        await api.prisma.$executeRawUnsafe('DROP TABLE delete_witness');
      }
      // The entry existed before the delete (written first, same transaction).
      expect(witnessed.find((w) => w.user_id === gone.user.id)).toEqual({
        user_id: gone.user.id,
        audited: 1,
      });

      expect(await api.prisma.user.findUnique({ where: { id: gone.user.id } })).toBeNull();
      await expectErased(gone);
      await expectIntact(inGrace);
      await expectIntact(active);

      const [entry] = await api.prisma.auditLog.findMany({
        where: { action: 'user.hard_deleted', resourceId: gone.user.id },
      });
      // Written while the row still existed (the foreign key accepted the identity id), then nulled by it.
      expect(entry).toMatchObject({ actor: 'system:account-deletion', userId: null, resourceType: 'user' });
      const erasedArchive = await api.prisma.webhookEvent.findFirstOrThrow({
        where: { eventId: 'msg_erased' },
      });
      expect(erasedArchive.payload).toEqual({ redacted: true, type: 'user.created' });
      expect(JSON.stringify(erasedArchive)).not.toContain('user_erased@example.com');
      const keptArchive = await api.prisma.webhookEvent.findFirstOrThrow({
        where: { eventId: 'msg_active' },
      });
      expect(JSON.stringify(keptArchive.payload)).toContain('user_active@example.com');
    });

    it('scrubs the e-mail events about the user and leaves no address in the audit log', async () => {
      const email = worker.get(EmailService);
      const admin = await api.bearer('user_admin', 'admin@example.com');
      const complained = await seedUserWithEverything(
        api.prisma,
        'user_mail_complained',
        'Mail.Complained@Example.com',
      );
      const bounced = await seedUserWithEverything(api.prisma, 'user_mail_bounced');
      const kept = await seedUserWithEverything(api.prisma, 'user_mail_kept');
      /** A welcome e-mail really sent (console provider); what a Resend event about it names. */
      const sendTo = async (seeded: SeededUser) => {
        const outcome = await email.sendTemplate({
          userId: seeded.user.id,
          templateKey: 'welcome',
          idempotencyKey: `welcome-erasure-${seeded.user.id}`,
        });
        expect(outcome.status).toBe('sent');
        return { providerMessageId: outcome.message!.providerMessageId!, to: seeded.user.email };
      };
      const deliver = async (event: object, outcome: string) => {
        const delivery = signEmailEvent(event);
        expect((await deliverEmailEvent(api, delivery)).outcome).toBe(outcome);
        return delivery.id;
      };
      const toComplained = await sendTo(complained);
      const toBounced = await sendTo(bounced);
      const erasedEvents = [
        await deliver(resendEvent('email-delivered', toComplained), 'processed'),
        await deliver(resendEvent('email-complained', toComplained), 'processed'),
        // About no message of ours (e.g. its provider id was never learnt): tied by the address alone.
        await deliver(
          resendEvent('email-delivery-delayed', { providerMessageId: 'not-ours', to: complained.user.email }),
          'skipped',
        ),
        await deliver(resendEvent('email-bounced', toBounced), 'processed'),
      ];
      const keptEvent = await deliver(resendEvent('email-delivered', await sendTo(kept)), 'processed');
      // The operator takes the bounced address off the list again (email.unsuppressed).
      const removed = await api.http
        .delete(`/api/v1/admin/email/suppressions/${encodeURIComponent(bounced.user.email)}`)
        .set('Authorization', admin);
      expect(removed.status).toBe(204);
      const erasedIds = [complained.user.identityUserId, bounced.user.identityUserId];
      const suppressionEntries = await api.prisma.auditLog.findMany({
        where: { action: { in: ['email.suppressed', 'email.unsuppressed'] }, userId: { in: erasedIds } },
        orderBy: { createdAt: 'asc' },
      });
      expect(suppressionEntries.map((entry) => [entry.action, entry.userId])).toEqual([
        ['email.suppressed', 'user_mail_complained'],
        ['email.suppressed', 'user_mail_bounced'],
        ['email.unsuppressed', 'user_mail_bounced'],
      ]);
      const archiveOf = (eventId: string) =>
        api.prisma.webhookEvent.findUniqueOrThrow({
          where: { provider_eventId: { provider: 'email', eventId } },
        });
      const before = await Promise.all(erasedEvents.map(archiveOf));

      await softDelete(complained.user, daysAgo(31));
      await softDelete(bounced.user, daysAgo(31));
      expect((await deletion.hardDeleteDue()).deleted).toBe(2);
      await expectErased(complained);
      await expectErased(bounced);
      await expectIntact(kept);

      const addresses = [complained.user.email, bounced.user.email].map((a) => a.toLowerCase());
      /** The rows that hold an erased address anywhere (any field, any case). */
      const holdingAddress = (rows: object[]) =>
        rows.filter((row) => addresses.some((a) => JSON.stringify(row).toLowerCase().includes(a)));
      // No audit entry holds an erased address; the suppression entries are kept, unlinked.
      expect(holdingAddress(await api.prisma.auditLog.findMany())).toEqual([]);
      for (const entry of suppressionEntries) {
        expect(await api.prisma.auditLog.findUnique({ where: { id: entry.id } })).toEqual({
          ...entry,
          userId: null,
        });
      }
      // The e-mail archive rows stay (status, type, times) without their payload; the admin view shows that.
      for (const row of before) {
        const { payload, ...rest } = row;
        expect(payload).toMatchObject({ type: row.eventType, data: expect.any(Object) });
        expect(await archiveOf(row.eventId)).toEqual({
          ...rest,
          payload: { redacted: true, type: row.eventType },
        });
      }
      const shown = await api.http.get(`/api/v1/admin/webhooks/${before[0].id}`).set('Authorization', admin);
      expect(shown.status).toBe(200);
      expect(shown.body.payload).toEqual({ redacted: true, type: 'email.delivered' });
      expect(holdingAddress(await api.prisma.webhookEvent.findMany({ omit: { intakeBatch: true } }))).toEqual(
        [],
      );
      // Another user's events keep theirs.
      expect((await archiveOf(keptEvent)).payload).toMatchObject({
        type: 'email.delivered',
        data: { to: [kept.user.email] },
      });
    });

    it("scrubs the erased user's archived bounces, by message id and by address in any case; another user's stays", async () => {
      const email = worker.get(EmailService);
      const erased = await seedUserWithEverything(
        api.prisma,
        'user_bounce_erased',
        'Bounce.Erased@Example.com',
      );
      const kept = await seedUserWithEverything(api.prisma, 'user_bounce_kept', 'Bounce.Kept@Example.com');
      const bounce = async (seeded: SeededUser) => {
        const outcome = await email.sendTemplate({
          userId: seeded.user.id,
          templateKey: 'welcome',
          idempotencyKey: `welcome-bounce-${seeded.user.id}`,
        });
        const providerMessageId = outcome.message!.providerMessageId!;
        const delivery = signEmailEvent(
          resendEvent('email-bounced', { providerMessageId, to: seeded.user.email }),
        );
        // Applied by the worker from the archived payload: the permanent bounce suppresses the address.
        expect((await deliverEmailEvent(api, delivery)).outcome).toBe('processed');
        expect(
          await api.prisma.emailSuppression.findUnique({ where: { email: seeded.user.email.toLowerCase() } }),
        ).toMatchObject({ reason: 'bounce', sourceEventId: delivery.id });
        return { eventId: delivery.id, body: delivery.body };
      };
      const archived = (eventId: string) =>
        api.prisma.webhookEvent.findUniqueOrThrow({
          where: { provider_eventId: { provider: 'email', eventId } },
        });
      const erasedBounce = await bounce(erased);
      const keptBounce = await bounce(kept);
      // Tied to the user by the address alone (a provider id we never learnt), sent in another case.
      const addressOnly = signEmailEvent(
        resendEvent('email-bounced', { providerMessageId: 'never-learnt', to: 'BOUNCE.ERASED@example.com' }),
      );
      expect((await deliverEmailEvent(api, addressOnly)).outcome).toBe('processed');

      // The archive holds the raw payloads: subject and tags, the recipients in the case they were sent.
      const keptBefore = await archived(keptBounce.eventId);
      expect(keptBefore.payload).toEqual(JSON.parse(keptBounce.body));
      expect((await archived(addressOnly.id)).payload).toMatchObject({
        data: { email_id: 'never-learnt', to: ['BOUNCE.ERASED@example.com'], subject: expect.any(String) },
      });

      await softDelete(erased.user, daysAgo(31));
      expect((await deletion.hardDeleteDue()).deleted).toBe(1);
      await expectErased(erased);
      await expectIntact(kept);
      for (const eventId of [erasedBounce.eventId, addressOnly.id]) {
        expect((await archived(eventId)).payload).toEqual({ redacted: true, type: 'email.bounced' });
      }
      expect(await archived(keptBounce.eventId)).toEqual(keptBefore);
    });

    describe('events still waiting for the worker when the user is erased', () => {
      /** Runs `during` with the webhook queue paused: what the API accepts meanwhile stays RECEIVED. */
      const webhooksPaused = async (during: () => Promise<void>) => {
        const queue = api.app.get(QueueService).queue(JOBS.applyWebhooks.queue);
        await queue.pause();
        try {
          await during();
        } finally {
          await queue.resume();
        }
      };
      const accept = async (path: string, delivery: { body: string; headers: Record<string, string> }) => {
        const res = await api.http.post(path).set(delivery.headers).send(delivery.body);
        expect(res.body).toMatchObject({ status: 'accepted' });
      };
      const archived = (provider: 'email' | 'identity', eventId: string) =>
        api.prisma.webhookEvent.findUniqueOrThrow({ where: { provider_eventId: { provider, eventId } } });
      const failureEntries = (eventId: string) =>
        api.prisma.auditLog.findMany({ where: { action: 'webhook.failed', resourceId: eventId } });
      const welcome = async (seeded: SeededUser) => {
        const outcome = await worker.get(EmailService).sendTemplate({
          userId: seeded.user.id,
          templateKey: 'welcome',
          idempotencyKey: `welcome-waiting-${seeded.user.id}`,
        });
        expect(outcome.status).toBe('sent');
        return outcome.message!.providerMessageId!;
      };

      it("leaves another account's bounce at an address the erased user once had: the worker applies it", async () => {
        // The erased user was mailed at an address they have left since; Bob holds it now.
        const erased = await seedUserWithEverything(
          api.prisma,
          'user_left_address',
          'Left.Address@Example.com',
        );
        await welcome(erased);
        await api.prisma.user.update({
          where: { id: erased.user.id },
          data: { email: 'user_left_address@example.com' },
        });
        const bob = await seedUserWithEverything(api.prisma, 'user_bob_address', 'left.address@example.com');
        const bounce = signEmailEvent(
          resendEvent('email-bounced', { providerMessageId: await welcome(bob), to: bob.user.email }),
        );
        await softDelete(erased.user, daysAgo(31));

        await webhooksPaused(async () => {
          await accept('/webhooks/email', bounce);
          expect((await deletion.hardDeleteDue()).deleted).toBe(1);
          // Tied to the erased user by the address alone: left for the worker, payload intact.
          expect(await archived('email', bounce.id)).toMatchObject({
            status: 'RECEIVED',
            payload: { type: 'email.bounced', data: { to: ['left.address@example.com'] } },
          });
        });
        await expectErased(erased);

        expect(await settled(api, 'email', bounce.id)).toMatchObject({ status: 'PROCESSED', error: null });
        expect(
          await api.prisma.emailSuppression.findUnique({ where: { email: 'left.address@example.com' } }),
        ).toMatchObject({ reason: 'bounce', sourceEventId: bounce.id });
        expect(await failureEntries(bounce.id)).toEqual([]);
      });

      it("archives the erased user's own waiting events SKIPPED (erased), not FAILED, without webhook.failed", async () => {
        const erased = await seedUserWithEverything(api.prisma, 'user_erased_waiting');
        // Its own by the message id (e-mail) and by the identity id (identity): scrubbed while RECEIVED.
        const bounce = signEmailEvent(
          resendEvent('email-bounced', { providerMessageId: await welcome(erased), to: erased.user.email }),
        );
        const update = signIdentityEvent(
          identityUserEvent('user.updated', erased.user.identityUserId, 'renamed-waiting@example.com'),
        );
        // A user.deleted keeps its identity id when redacted (the deletion guard reads it).
        const deleted = signIdentityEvent(identityDeletedEvent(erased.user.identityUserId));
        await softDelete(erased.user, daysAgo(31));

        await webhooksPaused(async () => {
          await accept('/webhooks/email', bounce);
          await accept('/webhooks/identity', update);
          await accept('/webhooks/identity', deleted);
          expect((await deletion.hardDeleteDue()).deleted).toBe(1);
          expect(await archived('email', bounce.id)).toMatchObject({
            status: 'RECEIVED',
            payload: { redacted: true, type: 'email.bounced' },
          });
          expect(await archived('identity', update.id)).toMatchObject({
            status: 'RECEIVED',
            payload: { redacted: true, type: 'user.updated' },
          });
        });

        expect(await settled(api, 'email', bounce.id)).toMatchObject({ status: 'SKIPPED', error: 'erased' });
        expect(await settled(api, 'identity', update.id)).toMatchObject({
          status: 'SKIPPED',
          error: 'erased',
        });
        expect(await settled(api, 'identity', deleted.id)).toMatchObject({
          status: 'SKIPPED',
          error: 'erased',
          payload: { redacted: true, type: 'user.deleted', data: { id: erased.user.identityUserId } },
        });
        expect(await failureEntries(deleted.id)).toEqual([]);
        expect(await failureEntries(bounce.id)).toEqual([]);
        expect(await failureEntries(update.id)).toEqual([]);
        // Nothing was applied: the erased user's address is not suppressed, no account came back.
        expect(await api.prisma.emailSuppression.count({ where: { sourceEventId: bounce.id } })).toBe(0);
        expect(await api.prisma.user.count({ where: { identityUserId: erased.user.identityUserId } })).toBe(
          0,
        );
      });
    });

    it('finds the e-mail archive rows to scrub through the partial keys index, not a scan of every e-mail row', async () => {
      // A few thousand archived e-mail events (and billing ones) of other recipients, as the table holds them.
      await api.prisma.$executeRaw`
        INSERT INTO webhook_events (id, provider, event_id, event_type, payload, status)
        SELECT gen_random_uuid(), CASE WHEN i % 4 = 0 THEN 'billing' ELSE 'email' END, 'plan_probe_' || i,
               'email.delivered',
               jsonb_build_object('type', 'email.delivered', 'data', jsonb_build_object(
                 'email_id', 'plan-probe-' || i, 'to', jsonb_build_array('probe-' || i || '@example.com'))),
               'PROCESSED'::"WebhookEventStatus"
        FROM generate_series(1, 4000) AS i`;
      try {
        await api.prisma.$executeRaw`ANALYZE webhook_events`;
        const { rows } = await api.prisma.pool.query<{ 'QUERY PLAN': unknown }>(
          `EXPLAIN (FORMAT JSON) ${SCRUB_EMAIL_ARCHIVE_SQL}`,
          [['plan-probe-1', 'plan-probe-2'], ['probe-3@example.com']],
        );
        const nodes = planNodes((rows[0]['QUERY PLAN'] as [{ Plan: PlanNode }])[0].Plan);
        // The ids and the addresses are each looked up in the keys index by overlap (not the index read
        // whole as the list of e-mail rows, which its partial predicate also allows), and no table is read
        // in full.
        expect(nodes.filter((node) => node['Index Name'] === 'webhook_events_email_keys_idx')).toEqual([
          expect.objectContaining({
            'Node Type': 'Bitmap Index Scan',
            'Index Cond': expect.stringMatching(/^\(email_archive_keys\(payload\) && \$\d\)$/),
          }),
          expect.objectContaining({
            'Node Type': 'Bitmap Index Scan',
            'Index Cond': expect.stringMatching(/^\(email_archive_keys\(payload\) && email_archive_keys\(/),
          }),
        ]);
        expect(nodes.filter((node) => node['Node Type'] === 'Seq Scan')).toEqual([]);
      } finally {
        await api.prisma.$executeRaw`DELETE FROM webhook_events WHERE event_id LIKE 'plan_probe_%'`;
      }
    });

    it('deletes each due user exactly once when two workers run at the same time', async () => {
      const users = await Promise.all(
        Array.from({ length: 6 }, (_, i) => seedUserWithEverything(api.prisma, `user_parallel_${i}`)),
      );
      for (const seeded of users) await softDelete(seeded.user, daysAgo(40));
      const other = env.startWorker();
      const second = (await other).get(AccountDeletionService);
      const [a, b] = await Promise.all([deletion.hardDeleteDue(), second.hardDeleteDue()]);
      expect(a.deleted + b.deleted).toBe(6);
      for (const seeded of users) {
        expect(await api.prisma.user.findUnique({ where: { id: seeded.user.id } })).toBeNull();
        expect(
          await api.prisma.auditLog.count({
            where: { action: 'user.hard_deleted', resourceId: seeded.user.id },
          }),
        ).toBe(1);
      }
    });

    it('skips a user another worker holds, without waiting, and gets it on the next run', async () => {
      const held = await seedUserWithEverything(api.prisma, 'user_held');
      await softDelete(held.user, daysAgo(31));
      const client = new pg.Client({ connectionString: env.db.url });
      await client.connect();
      try {
        await client.query('BEGIN');
        await client.query('SELECT id FROM users WHERE id = $1 FOR UPDATE', [held.user.id]);
        const run = await deletion.hardDeleteDue();
        expect(run.deleted).toBe(0);
        expect(await api.prisma.user.findUnique({ where: { id: held.user.id } })).not.toBeNull();
        await client.query('ROLLBACK');
      } finally {
        await client.end();
      }
      expect((await deletion.hardDeleteDue()).deleted).toBe(1);
      await expectErased(held);
    });

    it('resumes after a failure halfway: finished users stay erased, the failed one is redone', async () => {
      const broken = await seedUserWithEverything(api.prisma, 'user_broken');
      const fine = await seedUserWithEverything(api.prisma, 'user_fine');
      // The broken one is due first, so the failure happens before the other user's turn.
      await softDelete(broken.user, daysAgo(50));
      await softDelete(fine.user, daysAgo(45));
      await api.prisma.$executeRawUnsafe(`
        CREATE FUNCTION fail_delete() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'simulated crash'; END $$`);
      await api.prisma.$executeRawUnsafe(`
        CREATE TRIGGER fail_delete BEFORE DELETE ON users FOR EACH ROW
        WHEN (OLD.id = '${broken.user.id}'::uuid) EXECUTE FUNCTION fail_delete()`);
      try {
        await expect(deletion.hardDeleteDue()).rejects.toThrow(/hard delete failed for 1 user/);
        // Audit and delete share one transaction: the failed user has neither.
        expect(await api.prisma.user.findUnique({ where: { id: broken.user.id } })).not.toBeNull();
        expect(
          await api.prisma.auditLog.count({
            where: { action: 'user.hard_deleted', resourceId: broken.user.id },
          }),
        ).toBe(0);
        await expectIntact(broken);
        await expectErased(fine);
      } finally {
        await api.prisma.$executeRawUnsafe('DROP TRIGGER fail_delete ON users');
        await api.prisma.$executeRawUnsafe('DROP FUNCTION fail_delete()');
      }
      expect((await deletion.hardDeleteDue()).deleted).toBe(1);
      await expectErased(broken);
      expect(
        await api.prisma.auditLog.count({
          where: { action: 'user.hard_deleted', resourceId: broken.user.id },
        }),
      ).toBe(1);
    });

    it('runs daily through the scheduler and the worker, one job per day however many replicas fire', async () => {
      const due = await seedUserWithEverything(api.prisma, 'user_cron');
      await softDelete(due.user, daysAgo(31));
      const scheduler = worker.get(JobScheduler);
      const at = new Date();
      await Promise.all([
        scheduler.enqueue('hardDeleteAccounts', at),
        scheduler.enqueue('hardDeleteAccounts', at),
      ]);
      const queue = worker.get(QueueService).queue(JOBS.hardDeleteAccounts.queue);
      const jobs = await queue.getJobs(['waiting', 'active', 'completed', 'delayed']);
      expect(jobs.filter((job) => job.name === JOBS.hardDeleteAccounts.name)).toHaveLength(1);
      await waitFor(
        async () => (await api.prisma.user.findUnique({ where: { id: due.user.id } })) === null,
        10_000,
      );
      const run = await waitFor(async () => {
        const row = await api.prisma.jobRun.findUnique({ where: { name: JOBS.hardDeleteAccounts.name } });
        return row?.lastStatus === 'ok' ? row : null;
      });
      expect(run.runs).toBeGreaterThanOrEqual(1);
      await expectErased(due);
    });
  });

  interface UserForeignKey {
    table: string;
    column: string;
    /** The users column it points at: `id`, or `identity_user_id` (audit_logs). */
    references: string;
    /** pg_constraint.confdeltype: `c` cascade, `n` set null, `a` no action, `r` restrict, `d` set default. */
    on_delete: string;
    columns: number;
    primary_key: string;
  }

  /** Every foreign key that references users, read from the catalog, so a new one cannot be missed. */
  async function userForeignKeys(): Promise<UserForeignKey[]> {
    const keys = await api.prisma.$queryRaw<UserForeignKey[]>`
      SELECT c.conrelid::regclass::text AS table,
             (SELECT attname FROM pg_attribute WHERE attrelid = c.conrelid AND attnum = c.conkey[1])::text
               AS column,
             (SELECT attname FROM pg_attribute WHERE attrelid = c.confrelid AND attnum = c.confkey[1])::text
               AS references,
             c.confdeltype::text AS on_delete,
             cardinality(c.conkey) AS columns,
             (SELECT string_agg(a.attname, ',') FROM pg_index i
                JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
               WHERE i.indrelid = c.conrelid AND i.indisprimary) AS primary_key
      FROM pg_constraint c
      WHERE c.contype = 'f' AND c.confrelid = 'users'::regclass
      ORDER BY 1`;
    expect(keys.length).toBeGreaterThan(10);
    for (const key of keys) {
      // Single-column keys to single-column primary keys: what the checks below can address.
      expect({ table: key.table, columns: key.columns, pk: key.primary_key.includes(',') }).toEqual({
        table: key.table,
        columns: 1,
        pk: false,
      });
    }
    return keys;
  }

  const linkValue = (seeded: SeededUser, key: UserForeignKey) =>
    key.references === 'identity_user_id' ? seeded.user.identityUserId : seeded.user.id;

  const countLinked = async (seeded: SeededUser, key: UserForeignKey) => {
    const [{ n }] = await api.prisma.$queryRawUnsafe<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM "${key.table}" WHERE "${key.column}"::text = $1`,
      linkValue(seeded, key),
    );
    return n;
  };

  /**
   * The factory's promise, checked against the catalog: at least one row in every table with a foreign
   * key to users, and its id in `ids`. A table added to the schema but not to the factory fails here.
   */
  async function expectSeededEverywhere(seeded: SeededUser): Promise<void> {
    for (const key of await userForeignKeys()) {
      expect({
        table: key.table,
        seeded: (await countLinked(seeded, key)) > 0,
        id: key.table in seeded.ids,
      }).toEqual({ table: key.table, seeded: true, id: true });
    }
  }

  async function expectErased(seeded: SeededUser): Promise<void> {
    const { ids } = seeded;
    const p = api.prisma;
    expect(await p.user.findUnique({ where: { id: seeded.user.id } })).toBeNull();
    const keys = await userForeignKeys();
    // The erasure rules as the schema states them: money, feedback, broadcast and audit history are kept
    // with a null link (docs/decisions), everything else the user owned goes with the user.
    expect(keys.filter((k) => k.on_delete === 'n').map((k) => k.table)).toEqual([
      'audit_logs',
      'billing_adjustments',
      'broadcast_recipients',
      'feedback',
      'payments',
    ]);
    expect(keys.filter((k) => k.on_delete !== 'n').map((k) => [k.table, k.on_delete])).toEqual(
      keys.filter((k) => k.on_delete !== 'n').map((k) => [k.table, 'c']),
    );
    for (const key of keys) {
      // Nothing anywhere still points at the user.
      expect({ table: key.table, linked: await countLinked(seeded, key) }).toEqual({
        table: key.table,
        linked: 0,
      });
      // The seeded row itself: gone with the user, or kept with its link set to null.
      const rows = await p.$queryRawUnsafe<{ unlinked: boolean }[]>(
        `SELECT "${key.column}" IS NULL AS unlinked FROM "${key.table}" WHERE "${key.primary_key}"::text = $1`,
        ids[key.table],
      );
      expect({ table: key.table, rows }).toEqual({
        table: key.table,
        rows: key.on_delete === 'n' ? [{ unlinked: true }] : [],
      });
    }
    // Kept rows keep their content.
    expect(await p.broadcastRecipient.findUnique({ where: { id: ids.broadcast_recipients } })).toMatchObject({
      status: 'sent',
    });
    expect(await p.auditLog.findUnique({ where: { id: ids.audit_logs } })).toMatchObject({
      action: 'saved_search.created',
    });
    expect(await p.broadcastRun.count({ where: { id: ids.broadcast_runs } })).toBe(1);
  }

  async function expectIntact(seeded: SeededUser): Promise<void> {
    const p = api.prisma;
    expect(await p.user.findUnique({ where: { id: seeded.user.id } })).not.toBeNull();
    expect(await p.creditTransaction.count({ where: { userId: seeded.user.id } })).toBe(1);
    expect(await p.feedback.findUnique({ where: { id: seeded.ids.feedback } })).toMatchObject({
      userId: seeded.user.id,
    });
    expect(await p.auditLog.findUnique({ where: { id: seeded.ids.audit_logs } })).toMatchObject({
      userId: seeded.user.identityUserId,
    });
  }
});

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Index Cond'?: string;
  Plans?: PlanNode[];
}

/** Every node of an EXPLAIN (FORMAT JSON) plan. */
const planNodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(planNodes)];
