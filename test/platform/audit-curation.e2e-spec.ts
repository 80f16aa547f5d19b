import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { BroadcastsRepository } from '../../src/modules/broadcasts/broadcasts.repository.js';
import { createMember } from '../factories/audience.factory.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

/**
 * The allowlist of audit details is enforced where rows are written, not trusted to callers: the
 * broadcast page's bulk SQL insert curates too, whatever details it is handed.
 */
describe('audit details curation on every write path', () => {
  let env: TestEnv;
  let api: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
  });
  afterAll(() => env.close());

  it('curates the details of broadcast audit entries written in bulk', async () => {
    const user = await createMember(api.prisma, 'curation');
    const run = await api.prisma.broadcastRun.create({
      data: { templateKey: 'newsletter', kind: 'marketing', createdBy: 'user:admin', status: 'running' },
    });
    const messageId = randomUUID();
    await api.app.get(BroadcastsRepository).settle(run.id, 'newsletter', 'marketing', [
      {
        userId: user.id,
        identityUserId: user.identityUserId,
        email: user.email,
        status: 'sent',
        error: null,
        providerMessageId: 'msg_1',
        subject: 'News',
        html: '<p>News</p>',
        text: 'News',
        messageId,
        // Uncurated on purpose: an address, a nested object and an over-long value.
        auditDetails: {
          template: 'newsletter',
          broadcast_id: run.id,
          email: user.email,
          headers: { 'list-unsubscribe': '<https://example.test/u?t=secret>' },
          error: 'e'.repeat(900),
        },
      },
    ]);

    const entries = await api.prisma.auditLog.findMany({ where: { resourceId: messageId } });
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ action: 'email.sent', actor: 'system:broadcast' });
    expect(entries[0].details).toEqual({
      template: 'newsletter',
      broadcast_id: run.id,
      error: 'e'.repeat(500),
    });
  });
});
