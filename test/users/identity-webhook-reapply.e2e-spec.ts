import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { JobScheduler } from '../../src/infra/queue/job-scheduler.js';
import { WebhookInboxService } from '../../src/modules/webhooks/webhook-inbox.service.js';
import { clerkUserEvent, deliverIdentity, signIdentityEvent } from '../support/identity-webhook.js';
import { installRowFault, type RowFault } from '../support/row-fault.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

const HOUR = 3_600_000;
const MINUTE = 60_000;

/**
 * The automatic re-apply of events that failed processing (docs/decisions/billing.md, "an event FAILED
 * after its attempts") holds for the identity provider's events too, because their handlers converge
 * when applied late: hours or days after the failure, after newer events about the same identity were
 * applied. A database fault on the listed identities' user rows stands in for any processing failure (a
 * lock timeout, a deadlock storm, a bad deploy); the worker makes 3 attempts 50 ms apart here (TestEnv).
 */
describe('identity webhooks: automatic re-apply of events that failed processing', () => {
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;
  let fault: RowFault;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    worker = await env.startWorker();
    fault = await installRowFault(api.prisma, {
      name: 'reapply_refuse_user',
      table: 'users',
      on: 'INSERT OR UPDATE',
      key: 'NEW.identity_user_id',
    });
  });
  afterAll(() => env.close());

  const inbox = () => worker.get(WebhookInboxService);
  const archived = (eventId: string) =>
    api.prisma.webhookEvent.findUniqueOrThrow({
      where: { provider_eventId: { provider: 'identity', eventId } },
    });
  const untilSettled = (eventId: string, reapplies: number) =>
    waitFor(async () => {
      const row = await archived(eventId);
      return row.status !== 'RECEIVED' && row.autoReapplies === reapplies ? row : null;
    }, 15_000);
  const userOf = (identityUserId: string) => api.prisma.user.findUnique({ where: { identityUserId } });
  /** Delivers a Clerk event that fails processing; its FAILED row, whose first re-apply is due in an hour. */
  const failing = async (event: object, identityUserId: string) => {
    await fault.refuse(identityUserId);
    const delivery = signIdentityEvent(event);
    expect((await deliverIdentity(api, delivery)).outcome).toBe('failed');
    await fault.lift();
    const row = await archived(delivery.id);
    expect(row).toMatchObject({ status: 'FAILED', autoReapplies: 0 });
    expect(row.retryAt!.getTime() - Date.now()).toBeGreaterThan(HOUR - MINUTE);
    expect(row.retryAt!.getTime() - Date.now()).toBeLessThanOrEqual(HOUR);
    return row;
  };

  it("re-applies a user.created that failed processing in the relay's scheduled run, once it is due", async () => {
    const id = 'user_reapply_created';
    const failed = await failing(clerkUserEvent('user.created', id, { email: 'late@example.org' }), id);
    expect(await userOf(id)).toBeNull();
    // Not before it is due.
    expect(await inbox().reapplyDue(new Date(failed.retryAt!.getTime() - 1000))).toBe(0);

    // The hour has passed: the relay's tick (every 10 s in production) reopens it and the worker applies it.
    await api.prisma.webhookEvent.update({
      where: { id: failed.id },
      data: { retryAt: new Date(Date.now() - 1000) },
    });
    await worker.get(JobScheduler).enqueueInterval('relayWebhooks', new Date());
    expect(await untilSettled(failed.eventId, 1)).toMatchObject({ status: 'PROCESSED', retryAt: null });
    expect(await userOf(id)).toMatchObject({ email: 'late@example.org', deletedAt: null });
    const replayed = await api.prisma.auditLog.findMany({
      where: { action: 'webhook.replayed', resourceId: failed.eventId },
    });
    expect(replayed.map((entry) => [entry.actor, entry.details])).toEqual([
      [
        'system:webhook-reapply',
        {
          provider: 'identity',
          event_id: failed.eventId,
          event_type: 'user.created',
          previous_status: 'FAILED',
          source: 'automatic',
          count: 1,
        },
      ],
    ]);
    expect(await api.prisma.auditLog.count({ where: { action: 'user.created', userId: id } })).toBe(1);
  });

  it('a user.created re-applied after the provider deleted the user creates nothing and restores nothing', async () => {
    const t0 = new Date(Date.now() - 10 * MINUTE);
    const deletedAt = new Date(Date.now() - 5 * MINUTE);
    // Never seen before the deletion: the deletion finds no one, the late creation must not bring them in.
    const unseen = 'user_reapply_unseen';
    const unseenCreated = await failing(
      clerkUserEvent('user.created', unseen, { email: 'unseen@example.org', at: t0 }),
      unseen,
    );
    const unseenDeleted = signIdentityEvent(clerkUserEvent('user.deleted', unseen, { at: deletedAt }));
    expect((await deliverIdentity(api, unseenDeleted)).outcome).toBe('skipped');
    // Signed in just in time meanwhile, then deleted: the account is soft-deleted and must stay so.
    const seen = 'user_reapply_seen';
    const seenCreated = await failing(
      clerkUserEvent('user.created', seen, { email: 'seen@example.org', at: t0 }),
      seen,
    );
    expect(
      (await api.http.get('/api/v1/me').set('Authorization', await api.bearer(seen, 'seen@example.org')))
        .status,
    ).toBe(200);
    const seenDeleted = signIdentityEvent(clerkUserEvent('user.deleted', seen, { at: deletedAt }));
    expect((await deliverIdentity(api, seenDeleted)).outcome).toBe('processed');
    const softDeleted = await userOf(seen);
    expect(softDeleted?.deletedAt).not.toBeNull();

    expect(await inbox().reapplyDue(seenCreated.retryAt!)).toBe(2);
    const stale = 'stale event: not newer than the identity provider deleting the user';
    expect(await untilSettled(unseenCreated.eventId, 1)).toMatchObject({ status: 'SKIPPED', error: stale });
    expect(await untilSettled(seenCreated.eventId, 1)).toMatchObject({ status: 'SKIPPED', error: stale });
    expect(await userOf(unseen)).toBeNull();
    expect(await userOf(seen)).toEqual(softDeleted);
    expect(await api.prisma.auditLog.count({ where: { action: 'user.created', userId: unseen } })).toBe(0);
  });

  it('a user.updated re-applied after a newer one is skipped as stale: the newer address stays', async () => {
    const id = 'user_reapply_updated';
    const created = signIdentityEvent(
      clerkUserEvent('user.created', id, {
        email: 'first@example.org',
        at: new Date(Date.now() - 3 * MINUTE),
      }),
    );
    expect((await deliverIdentity(api, created)).outcome).toBe('processed');
    const older = await failing(
      clerkUserEvent('user.updated', id, {
        email: 'older@example.org',
        at: new Date(Date.now() - 2 * MINUTE),
      }),
      id,
    );
    const newer = signIdentityEvent(
      clerkUserEvent('user.updated', id, { email: 'newer@example.org', at: new Date(Date.now() - MINUTE) }),
    );
    expect((await deliverIdentity(api, newer)).outcome).toBe('processed');

    expect(await inbox().reapplyDue(older.retryAt!)).toBe(1);
    expect(await untilSettled(older.eventId, 1)).toMatchObject({
      status: 'SKIPPED',
      error: 'stale event: older than the last change applied',
    });
    expect(await userOf(id)).toMatchObject({ email: 'newer@example.org' });
  });

  it('a user.deleted re-applied later still starts the soft delete of the account', async () => {
    const id = 'user_reapply_deleted';
    const created = signIdentityEvent(
      clerkUserEvent('user.created', id, { email: 'gone@example.org', at: new Date(Date.now() - MINUTE) }),
    );
    expect((await deliverIdentity(api, created)).outcome).toBe('processed');
    const deleted = await failing(clerkUserEvent('user.deleted', id), id);
    expect((await userOf(id))?.deletedAt).toBeNull();

    expect(await inbox().reapplyDue(deleted.retryAt!)).toBe(1);
    expect(await untilSettled(deleted.eventId, 1)).toMatchObject({ status: 'PROCESSED' });
    expect(await userOf(id)).toMatchObject({ deletedAt: expect.any(Date), deletedVia: 'identity_webhook' });
  });

  it('a user.deleted waiting for its re-apply still keeps an older user.created from creating the account', async () => {
    // The provider deleted a person we never saw, and archiving that (SKIPPED, unknown user) failed: a
    // database fault on the archive row's final status stands in for any processing failure.
    const skip = await installRowFault(api.prisma, {
      name: 'reapply_refuse_skip',
      table: 'webhook_events',
      on: 'UPDATE',
      key: "NEW.payload->'data'->>'id'",
      when: "NEW.status = 'SKIPPED'",
    });
    const id = 'user_reapply_deletion_pending';
    await skip.refuse(id);
    const deleted = signIdentityEvent(
      clerkUserEvent('user.deleted', id, { at: new Date(Date.now() - MINUTE) }),
    );
    expect((await deliverIdentity(api, deleted)).outcome).toBe('failed');
    await skip.remove();
    expect(await archived(deleted.id)).toMatchObject({ status: 'FAILED', retryAt: expect.any(Date) });

    // Svix retries the earlier user.created before the deletion's re-apply is due: nothing is created.
    const created = signIdentityEvent(
      clerkUserEvent('user.created', id, {
        email: 'pending@example.org',
        at: new Date(Date.now() - 2 * MINUTE),
      }),
    );
    expect((await deliverIdentity(api, created)).outcome).toBe('skipped');
    expect(await archived(created.id)).toMatchObject({
      error: 'stale event: not newer than the identity provider deleting the user',
    });
    expect(await userOf(id)).toBeNull();

    // Its re-apply archives it as before (no one to delete), and leaves nothing due for the next test.
    const pending = await archived(deleted.id);
    expect(await inbox().reapplyDue(pending.retryAt!)).toBe(1);
    expect(await untilSettled(deleted.id, 1)).toMatchObject({ status: 'SKIPPED' });
    expect(await userOf(id)).toBeNull();
  });

  it('never re-applies a refused identity payload', async () => {
    const event = clerkUserEvent('user.created', 'user_reapply_refused', {
      email: 'refused@example.org',
    }) as {
      data: Record<string, unknown>;
    };
    event.data.email_addresses = 'not a list';
    const delivery = signIdentityEvent(event);
    expect((await api.http.post('/webhooks/identity').set(delivery.headers).send(delivery.body)).status).toBe(
      400,
    );
    expect(await archived(delivery.id)).toMatchObject({ status: 'FAILED', retryAt: null });
    expect(await inbox().reapplyDue(new Date(Date.now() + 400 * HOUR))).toBe(0);
    expect(await archived(delivery.id)).toMatchObject({ status: 'FAILED', autoReapplies: 0 });
  });
});
