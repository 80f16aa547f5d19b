import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SqlParams } from '../../src/infra/prisma/sql-params.js';
import type { AuditDetails } from '../../src/modules/audit/audit.details.js';
import { AuditService, systemActor } from '../../src/modules/audit/audit.service.js';
import { createMember } from '../factories/audience.factory.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

/**
 * The allowlist of audit details is enforced where rows are written, not trusted to callers: the bulk
 * insert a broadcast page uses (AuditService.recordManyPart) curates too, whatever details it is handed.
 */
describe('audit details curation on every write path', () => {
  let env: TestEnv;
  let api: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
  });
  afterAll(() => env.close());

  it('curates the details of audit entries written in bulk (a broadcast page)', async () => {
    const user = await createMember(api.prisma, 'curation');
    const run = await api.prisma.broadcastRun.create({
      data: { templateKey: 'newsletter', kind: 'marketing', createdBy: 'user:admin', status: 'running' },
    });
    const messageId = randomUUID();
    // The part a broadcast page adds to its statement, run here on its own.
    const params = new SqlParams();
    const part = api.app.get(AuditService).recordManyPart(
      params,
      [
        {
          actor: systemActor('broadcast'),
          action: 'email.sent',
          userId: user.identityUserId,
          resourceType: 'email',
          resourceId: messageId,
          // Uncurated on purpose: an address, a nested object and an over-long value.
          details: {
            template: 'newsletter',
            broadcast_id: run.id,
            email: user.email,
            headers: { 'list-unsubscribe': '<https://example.test/u?t=secret>' },
            error: 'e'.repeat(900),
          } as AuditDetails,
          ord: 1,
        },
      ],
      'keep',
    );
    await api.prisma.pool.query(
      `WITH keep AS (SELECT 1 AS ord), entries AS (${part}) SELECT 1`,
      params.values,
    );

    const entries = await api.prisma.auditLog.findMany({ where: { resourceId: messageId } });
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ action: 'email.sent', actor: 'system:broadcast' });
    expect(entries[0].details).toEqual({
      template: 'newsletter',
      broadcast_id: run.id,
      error: 'e'.repeat(500),
    });
  });

  it('stores a detail clipped inside an emoji, or holding a NUL, instead of failing the audited write', async () => {
    const resourceId = randomUUID();
    // 499 characters, then an emoji (two UTF-16 units): a plain slice at 500 keeps half of it.
    const clippedInsideEmoji = `${'x'.repeat(499)}😀 and more`;
    await api.prisma.$transaction((tx) =>
      api.app.get(AuditService).record(tx, {
        actor: systemActor('test'),
        action: 'webhook.failed',
        resourceType: 'webhook_event',
        resourceId,
        details: { error: clippedInsideEmoji, reason: 'a\u0000b' },
      }),
    );
    const [entry] = await api.prisma.auditLog.findMany({ where: { resourceId } });
    expect(entry.details).toEqual({ error: 'x'.repeat(499), reason: 'a\\u0000b' });
  });
});
