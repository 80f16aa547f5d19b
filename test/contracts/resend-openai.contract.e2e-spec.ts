import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { HttpClient } from '../../src/infra/http/http-client.js';
import { EmailService } from '../../src/modules/email/email.service.js';
import { EmailProvider } from '../../src/modules/email/providers/email-provider.js';
import { createMember } from '../factories/audience.factory.js';
import { FakeEmailApi } from '../fakes/email-api.js';
import { FakeLlmServer } from '../fakes/llm-server.js';
import { expectLedgerConsistent, grantCredits } from '../support/credits.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { fixture, type Json } from './contract-support.js';

type Completion = {
  id: string;
  choices: { message: { content: string | null; refusal: string | null } }[];
  usage: { prompt_tokens: number; completion_tokens: number; completion_tokens_details?: Json };
};

/**
 * Recorded answers of Resend (resend-node tests) and OpenAI (openai-node tests), replayed by the local
 * fakes; the service's behaviour with each is asserted.
 */
describe('contract: Resend and OpenAI answers replayed from the SDKs’ own tests', () => {
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;
  let mail: FakeEmailApi;
  let llm: FakeLlmServer;

  beforeAll(async () => {
    [mail, llm] = await Promise.all([FakeEmailApi.start(), FakeLlmServer.start()]);
    env = await TestEnv.create({
      env: {
        ...mail.env(),
        LLM_BASE_URL: llm.baseUrl,
        LLM_API_KEY: 'sk-test',
        LLM_MODEL: 'gpt-4o-2024-08-06',
      },
    });
    env.onClose(async () => {
      await mail.close();
      await llm.close();
    });
    const config = env.configWith({});
    // 10 credits per 1k tokens, so the charge of a small answer is visible.
    config.project = { ...config.project, creditsPer1kTokens: 10 };
    api = await env.startApi({ config });
    api.app.get(HttpClient).backoffBaseMs = 1;
    worker = await env.startWorker();
  });
  afterAll(() => env.close());

  describe('Resend', () => {
    it('records a single e-mail as sent with the id Resend answered', async () => {
      const answer = fixture<{ id: string }>('resend', 'emails.send');
      mail.replayAnswer('/emails', answer);
      const user = await createMember(api.prisma, 'resend-single', { consent: true });
      const job = { userId: user.id, templateKey: 'welcome', idempotencyKey: `welcome-${user.id}` };
      const outcome = await worker.get(EmailService).sendTemplate(job);
      expect(outcome.status).toBe('sent');
      expect(
        await api.prisma.emailMessage.findUniqueOrThrow({ where: { idempotencyKey: job.idempotencyKey } }),
      ).toMatchObject({ status: 'sent', providerMessageId: answer.id, toAddress: user.email });
      expect(mail.deliveredTo(user.email).map((d) => d.id)).toEqual([answer.id]);
      expect(
        await api.prisma.auditLog.count({ where: { action: 'email.sent', userId: user.identityUserId } }),
      ).toBe(1);
    });

    it('maps a batch answer to its messages in order', async () => {
      const answer = fixture<{ data: { id: string }[] }>('resend', 'emails.batch');
      mail.replayAnswer('/emails/batch', answer);
      const users = await Promise.all(
        answer.data.map((_, i) => createMember(api.prisma, `resend-batch-${i}`, { consent: true })),
      );
      const email = worker.get(EmailService);
      const messages = users.map((user) =>
        email.compose(user, { templateKey: 'newsletter', idempotencyKey: `nl-${user.id}` }),
      );
      const results = await worker.get(EmailProvider).sendBatch(messages, 'contract-batch-1');
      expect(results).toEqual(answer.data.map(({ id }) => ({ id })));
      expect(users.map((user) => mail.deliveredTo(user.email)[0]?.id)).toEqual(
        answer.data.map(({ id }) => id),
      );
    });
  });

  describe('OpenAI chat completions', () => {
    let n = 0;
    async function customer(credits: number) {
      n += 1;
      const sub = `user_contract_ai_${n}`;
      const auth = await api.bearer(sub);
      await api.http.get('/api/v1/credits').set('Authorization', auth).expect(200);
      const user = await api.prisma.user.update({
        where: { identityUserId: sub },
        data: { currentTier: 'PRO' },
      });
      await grantCredits(api, user.id, credits);
      return { user, auth };
    }
    const complete = (auth: string) =>
      api.http
        .post('/api/v1/ai/completions')
        .set('Authorization', auth)
        .send({ messages: [{ role: 'user', content: 'a bad question' }], max_tokens: 300 });
    const balance = async (id: string) =>
      (await api.prisma.user.findUniqueOrThrow({ where: { id } })).creditBalance;

    it('returns an answer with usage details and charges its tokens', async () => {
      const recorded = fixture<Completion>('openai', 'chat-completion.answer');
      expect(recorded.usage.completion_tokens_details).toBeDefined();
      llm.behaviour = { kind: 'recorded', body: recorded };
      const { user, auth } = await customer(100);
      const res = await complete(auth);
      expect(res.status).toBe(200);
      // 167 + 13 tokens at 10 credits per 1k = 1.8, charged as 2.
      expect(res.body).toEqual({
        id: expect.any(String),
        content: recorded.choices[0].message.content,
        refusal: null,
        usage: { prompt_tokens: 167, completion_tokens: 13 },
        credits_charged: 2,
      });
      expect(await balance(user.id)).toBe(98);
      await expectLedgerConsistent(api.prisma);
    });

    it('returns a refusal as 200 with content null and the refusal, charged like any answer', async () => {
      const recorded = fixture<Completion>('openai', 'chat-completion.refusal');
      expect(recorded.choices[0].message.content).toBeNull();
      llm.behaviour = { kind: 'recorded', body: recorded };
      const { user, auth } = await customer(100);
      const res = await complete(auth);
      expect(res.status).toBe(200);
      // 17 + 13 tokens at 10 credits per 1k = 0.3, charged as 1.
      expect(res.body).toEqual({
        id: expect.any(String),
        content: null,
        refusal: "I'm very sorry, but I can't assist with that request.",
        usage: { prompt_tokens: 17, completion_tokens: 13 },
        credits_charged: 1,
      });
      expect(await balance(user.id)).toBe(99);
      await expectLedgerConsistent(api.prisma);
    });
  });
});
