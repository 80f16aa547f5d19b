import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { BroadcastDispatcher } from '../../src/modules/broadcasts/broadcast-dispatcher.js';
import { EmailService } from '../../src/modules/email/email.service.js';
import { createAudience, createMember } from '../factories/audience.factory.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

describe('console e-mail provider (the local default): the message is kept where a developer reads it', () => {
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;

  beforeAll(async () => {
    env = await TestEnv.create();
    expect(env.config.email.provider).toBe('console');
    api = await env.startApi();
    worker = await env.startWorker();
  });
  afterAll(() => env.close());

  it('stores the subject, HTML and text of a single send in email_messages', async () => {
    const user = await createMember(api.prisma, 'console-single', { consent: true, locale: 'de' });
    const outcome = await worker.get(EmailService).sendTemplate({
      userId: user.id,
      templateKey: 'newsletter',
      idempotencyKey: `nl-console-${user.id}`,
    });
    expect(outcome.status).toBe('sent');
    const row = await api.prisma.emailMessage.findUniqueOrThrow({
      where: { idempotencyKey: `nl-console-${user.id}` },
    });
    expect(row).toMatchObject({
      status: 'sent',
      toAddress: user.email,
      subject: 'Neues von subscription-service',
      providerMessageId: expect.stringMatching(/^console_/),
    });
    expect(row.html).toContain('</html>');
    expect(row.html).toContain('/api/v1/email/unsubscribe?t=');
    expect(row.text).toContain('Abmelden: https://app.example.test/api/v1/email/unsubscribe?t=');
  });

  it('stores the body of every broadcast message too', async () => {
    const start = Date.UTC(2032, 0, 1);
    const members = await createAudience(api.prisma, 'console-broadcast', 3, {
      consent: true,
      createdAt: new Date(start + 3_600_000),
    });
    const run = await api.prisma.broadcastRun.create({
      data: {
        templateKey: 'newsletter',
        kind: 'marketing',
        audience: {
          signed_up_after: new Date(start).toISOString(),
          signed_up_before: new Date(start + 86_400_000).toISOString(),
        },
        createdBy: 'user:user_admin',
      },
    });
    expect(await worker.get(BroadcastDispatcher).run(run.id)).toMatchObject({
      status: 'done',
      counts: { sent: 3 },
    });
    const rows = await api.prisma.emailMessage.findMany({ where: { broadcastRunId: run.id } });
    expect(rows.map((r) => r.toAddress).sort()).toEqual(members.map((m) => m.email).sort());
    for (const row of rows) {
      expect(row.subject).toBe('subscription-service news');
      expect(row.html).toContain('</html>');
      expect(row.text).toContain('Unsubscribe: ');
    }
  });
});
