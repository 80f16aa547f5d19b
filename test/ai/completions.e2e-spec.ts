import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { HttpClient } from '../../src/infra/http/http-client.js';
import type { User } from '../../src/generated/prisma/client.js';
import { fixture } from '../contracts/contract-support.js';
import { FakeLlmServer, type LlmBehaviour } from '../fakes/llm-server.js';
import { expectLedgerConsistent, grantCredits } from '../support/credits.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

const MESSAGES = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Say hello.' },
];
// Prompt bound: 9 + 10 bytes + 2 * 4 framing + 3 = 30 tokens; with max_tokens 970 the reservation is
// exactly 1,000 tokens = 1 credit at the default price, so tests use a price of 10 per 1k (see beforeAll).

describe('POST /api/v1/ai/completions (metered, against a local OpenAI-compatible server)', () => {
  let env: TestEnv;
  let api: ApiApp;
  let llm: FakeLlmServer;
  let users = 0;

  beforeAll(async () => {
    llm = await FakeLlmServer.start();
    env = await TestEnv.create({
      env: { LLM_BASE_URL: llm.baseUrl, LLM_API_KEY: 'sk-test-llm', LLM_MODEL: 'fake-1' },
    });
    const config = env.configWith({});
    // 10 credits per 1k tokens makes the arithmetic below visible (the default of 1 rounds most calls to 1).
    config.project = { ...config.project, creditsPer1kTokens: 10 };
    api = await env.startApi({ config });
    api.app.get(HttpClient).backoffBaseMs = 1;
  });
  afterEach(async () => {
    llm.behaviour = { kind: 'ok' };
    await expectLedgerConsistent(api.prisma);
  });
  afterAll(async () => {
    await env.close();
    await llm.close();
  });

  /** A PRO user (JIT through a real token) with `credits` granted. */
  async function customer(credits: number): Promise<{ user: User; auth: string }> {
    users += 1;
    const sub = `user_ai_${users}`;
    const auth = await api.bearer(sub);
    await api.http.get('/api/v1/credits').set('Authorization', auth).expect(200);
    const user = await api.prisma.user.update({
      where: { identityUserId: sub },
      data: { currentTier: 'PRO' },
    });
    if (credits > 0) await grantCredits(api, user.id, credits);
    return { user, auth };
  }

  const complete = (auth: string, body: object, key?: string) => {
    const req = api.http.post('/api/v1/ai/completions').set('Authorization', auth);
    return (key ? req.set('Idempotency-Key', key) : req).send(body);
  };
  const ledger = (userId: string) =>
    api.prisma.creditTransaction.findMany({ where: { userId }, orderBy: { createdAt: 'asc' } });
  const balance = async (userId: string) =>
    (await api.prisma.user.findUniqueOrThrow({ where: { id: userId } })).creditBalance;

  it('charges the real cost from usage: reserve the bound, settle the difference', async () => {
    const { user, auth } = await customer(100);
    llm.behaviour = { kind: 'ok', content: 'Hello!', usage: { prompt_tokens: 20, completion_tokens: 180 } };
    const res = await complete(auth, { messages: MESSAGES, max_tokens: 970 });
    expect(res.status).toBe(200);
    // 200 tokens at 10 per 1k = 2 credits; the reservation was 1,000 tokens = 10 credits.
    expect(res.body).toEqual({
      id: expect.stringMatching(/^ai-/),
      content: 'Hello!',
      refusal: null,
      usage: { prompt_tokens: 20, completion_tokens: 180 },
      credits_charged: 2,
    });
    expect(res.headers['ratelimit-limit']).toBe('60');
    expect(res.headers['ratelimit-remaining']).toBe('59');
    const rows = await ledger(user.id);
    expect(rows.filter((r) => r.jobId === res.body.id).map((r) => [r.kind, r.delta])).toEqual([
      ['spend', -10],
      ['settle', 8],
    ]);
    expect(await balance(user.id)).toBe(98);
    expect(await api.prisma.creditHold.count({ where: { userId: user.id } })).toBe(0);
    const sent = llm.requests.at(-1)!;
    expect(sent.authorization).toBe('Bearer sk-test-llm');
    expect(sent.body).toEqual({ model: 'fake-1', messages: MESSAGES, max_tokens: 970 });
  });

  it('settles with 0 when the reservation was exact and defaults max_tokens to min(1024, tier max)', async () => {
    const { user, auth } = await customer(20);
    llm.behaviour = { kind: 'ok', usage: { prompt_tokens: 30, completion_tokens: 1024 } };
    const res = await complete(auth, { messages: MESSAGES });
    expect(res.status).toBe(200);
    expect(llm.requests.at(-1)!.body.max_tokens).toBe(1024);
    // (30 + 1024) tokens -> 11 credits reserved and charged; the settle row gives back 0.
    expect(res.body.credits_charged).toBe(11);
    expect(
      (await ledger(user.id)).filter((r) => r.jobId === res.body.id).map((r) => [r.kind, r.delta]),
    ).toEqual([
      ['spend', -11],
      ['settle', 0],
    ]);
  });

  it('never charges more than the reservation, even when the provider over-reports', async () => {
    const { user, auth } = await customer(10);
    llm.behaviour = { kind: 'ok', usage: { prompt_tokens: 5000, completion_tokens: 5000 } };
    const res = await complete(auth, { messages: MESSAGES, max_tokens: 970 });
    expect(res.body.credits_charged).toBe(10);
    expect(await balance(user.id)).toBe(0);
  });

  describe('provider errors: what the caller is told, the reservation refunded every time', () => {
    /** The reservation (10 credits) refunded at once: spend and refund, the balance as it was, no hold. */
    async function expectRefunded(userId: string, granted: number) {
      expect((await ledger(userId)).map((r) => [r.kind, r.delta])).toEqual([
        ['grant', granted],
        ['spend', -10],
        ['refund', 10],
      ]);
      expect(await balance(userId)).toBe(granted);
      expect(await api.prisma.creditHold.count({ where: { userId } })).toBe(0);
    }
    const problem = (res: { status: number; headers: Record<string, string>; body: unknown }) => {
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      return res.body as { status: number; code: string; detail: string; [member: string]: unknown };
    };

    it('a provider still rate limiting after 3 attempts: 503 upstream_rate_limited with its Retry-After', async () => {
      const { user, auth } = await customer(50);
      llm.behaviour = {
        kind: 'status',
        status: 429,
        headers: { 'retry-after': '2' },
        body: {
          error: {
            message: 'Rate limit reached for requests',
            type: 'requests',
            param: null,
            code: 'rate_limit_exceeded',
          },
        },
      };
      const before = llm.requests.length;
      const res = await complete(auth, { messages: MESSAGES, max_tokens: 970 });
      expect(res.status).toBe(503);
      expect(problem(res)).toMatchObject({ status: 503, code: 'upstream_rate_limited' });
      // The provider's last Retry-After (not the 5 s default of our other 503s).
      expect(res.headers['retry-after']).toBe('2');
      expect(res.headers['ratelimit-limit']).toBe('60');
      expect(llm.requests.length - before).toBe(3);
      await expectRefunded(user.id, 50);
    });

    it('a provider failing (500) on every attempt: 503 upstream_unavailable with Retry-After', async () => {
      const { user, auth } = await customer(50);
      llm.behaviour = { kind: 'status', status: 500 };
      const before = llm.requests.length;
      const res = await complete(auth, { messages: MESSAGES, max_tokens: 970 });
      expect(res.status).toBe(503);
      expect(problem(res)).toMatchObject({ status: 503, code: 'upstream_unavailable' });
      expect(res.headers['retry-after']).toBe('5');
      expect(llm.requests.length - before).toBe(3);
      await expectRefunded(user.id, 50);
    });

    it.each([
      [
        'OpenAI’s context_length_exceeded',
        ['openai', 'chat-completion.error-context-length'],
        { type: 'invalid_request_error', code: 'context_length_exceeded', param: 'messages' },
      ],
      [
        'a self-hosted model’s prompt over its context size (llama.cpp)',
        ['llama-cpp', 'chat-completion.error-exceed-context-size'],
        { type: 'exceed_context_size_error', code: '400', param: null },
      ],
    ] as const)(
      'a request the provider refuses (%s): 400 completion_rejected quoting why, no retry',
      async (_name, [provider, name], reason) => {
        const { user, auth } = await customer(50);
        const rejection = fixture<{ error: { message: string } }>(provider, name);
        llm.behaviour = { kind: 'status', status: 400, body: rejection };
        const before = llm.requests.length;
        const res = await complete(auth, { messages: MESSAGES, max_tokens: 970 });
        expect(res.status).toBe(400);
        const body = problem(res);
        expect(body).toMatchObject({
          status: 400,
          code: 'completion_rejected',
          provider_error: { status: 400, ...reason },
        });
        expect(body.detail).toContain(`(type ${reason.type}, code ${reason.code})`);
        expect(body.detail).toContain(rejection.error.message);
        expect(res.headers['retry-after']).toBeUndefined();
        expect(llm.requests.length - before).toBe(1);
        await expectRefunded(user.id, 50);
      },
    );

    it.each([413, 422])(
      'a %i with a hostile message: 400 completion_rejected, the message on one short printable line',
      async (status) => {
        const { user, auth } = await customer(50);
        const message = `first line\r\n\u001b[2J\u202Etxt.exe\u200B\uFEFF${'x'.repeat(5000)}`;
        llm.behaviour = {
          kind: 'status',
          status,
          body: { error: { message, type: 'invalid_request_error', param: 'messages', code: null } },
        };
        const res = await complete(auth, { messages: MESSAGES, max_tokens: 970 });
        expect(res.status).toBe(400);
        const body = problem(res);
        expect(body).toMatchObject({ code: 'completion_rejected', provider_error: { status } });
        expect(body.detail).toContain('first line [2J txt.exe xxx');
        // eslint-disable-next-line no-control-regex -- matching control characters is the point
        expect(body.detail).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202A-\u202E\u200B\uFEFF]/);
        expect(body.detail).toContain('txt.exe xxx');
        expect(body.detail.length).toBeLessThan(600);
        await expectRefunded(user.id, 50);
      },
    );

    /** The error line LlmClient wrote for the operators since `logsBefore`, parsed; never the provider's text. */
    function errorLogged(logsBefore: number, text: string, providerText: string) {
      const written = env.logs.lines.slice(logsBefore);
      expect(written.join('\n')).not.toContain(providerText);
      const logged = written.find((line) => line.includes(text));
      expect(logged).toBeDefined();
      return JSON.parse(logged!) as Record<string, unknown>;
    }

    it('a 400 naming nothing in the request (Gemini’s answer to a bad key): 502 upstream_error, no provider text, logged as an error', async () => {
      const { user, auth } = await customer(50);
      llm.behaviour = {
        kind: 'status',
        status: 400,
        body: fixture<unknown[]>('gemini', 'openai-compat.error-api-key-invalid'),
      };
      const logsBefore = env.logs.lines.length;
      const res = await complete(auth, { messages: MESSAGES, max_tokens: 970 });
      expect(res.status).toBe(502);
      const body = problem(res);
      expect(body).toMatchObject({ status: 502, code: 'upstream_error' });
      expect(JSON.stringify(body)).not.toMatch(/API key not valid|INVALID_ARGUMENT/);
      expect(body.provider_error).toBeUndefined();
      await expectRefunded(user.id, 50);
      expect(errorLogged(logsBefore, 'check LLM_API_KEY', 'API key not valid')).toMatchObject({
        level: 50,
        provider_status: 400,
        code: 'upstream_error',
      });
    });

    it('a refused max_tokens is the caller’s only when the caller chose it: 400 then, 502 for our default', async () => {
      const { user, auth } = await customer(50);
      const refusal = (maxTokens: number) => ({
        error: {
          message: `max_tokens is too large: ${maxTokens}. This model supports at most 512 completion tokens, whereas you provided ${maxTokens}.`,
          type: 'invalid_request_error',
          param: 'max_tokens',
          code: 'invalid_value',
        },
      });
      llm.behaviour = { kind: 'status', status: 400, body: refusal(970) };
      const chosen = await complete(auth, { messages: MESSAGES, max_tokens: 970 });
      expect(chosen.status).toBe(400);
      expect(problem(chosen)).toMatchObject({
        code: 'completion_rejected',
        provider_error: { param: 'max_tokens', code: 'invalid_value' },
      });
      expect(problem(chosen).detail).toContain('max_tokens is too large: 970');

      // Without max_tokens we sent the tier's default (1,024): the model's limit is our configuration.
      llm.behaviour = { kind: 'status', status: 400, body: refusal(1024) };
      const logsBefore = env.logs.lines.length;
      const defaulted = await complete(auth, { messages: MESSAGES });
      expect(llm.requests.at(-1)!.body.max_tokens).toBe(1024);
      expect(defaulted.status).toBe(502);
      expect(problem(defaulted)).toMatchObject({ code: 'upstream_error' });
      expect(defaulted.text).not.toContain('too large');
      expect(errorLogged(logsBefore, 'check LLM_API_KEY', 'too large')).toMatchObject({
        level: 50,
        provider_status: 400,
        provider_param: 'max_tokens',
        provider_code: 'invalid_value',
      });
      // Both reservations (10 and 11 credits) refunded at once.
      expect((await ledger(user.id)).map((r) => [r.kind, r.delta])).toEqual([
        ['grant', 50],
        ['spend', -10],
        ['refund', 10],
        ['spend', -11],
        ['refund', 11],
      ]);
      expect(await balance(user.id)).toBe(50);
    });

    /** The ledger of a user who made two calls of 11 credits (30 prompt tokens + 1,024), both refunded. */
    const refundedTwice = [
      ['grant', 50],
      ['spend', -11],
      ['refund', 11],
      ['spend', -11],
      ['refund', 11],
    ];

    it.each([
      ['the renderer’s wording', 'renderer.chat-completion.error-prompt-over-context'],
      ['the wording of _validate_input', 'serving.chat-completion.error-prompt-over-context'],
    ])(
      'vLLM’s refusal of a prompt over the model’s context window (%s): 400 completion_rejected, with our default max_tokens or the caller’s',
      async (_name, name) => {
        const { user, auth } = await customer(50);
        const rejection = fixture<{ error: { message: string } }>('vllm', name);
        llm.behaviour = { kind: 'status', status: 400, body: rejection };
        const before = llm.requests.length;
        // Our default (1,024) went out, but the prompt alone (5,000 tokens) is over the 4,096-token window.
        const defaulted = await complete(auth, { messages: MESSAGES });
        expect(llm.requests.at(-1)!.body.max_tokens).toBe(1024);
        const chosen = await complete(auth, { messages: MESSAGES, max_tokens: 1024 });
        for (const res of [defaulted, chosen]) {
          expect(res.status).toBe(400);
          const body = problem(res);
          expect(body).toMatchObject({
            status: 400,
            code: 'completion_rejected',
            provider_error: { status: 400, type: 'BadRequestError', code: '400', param: 'input_tokens' },
          });
          expect(body.detail).toContain('(type BadRequestError, code 400)');
          expect(body.detail).toContain(rejection.error.message);
          expect(res.headers['retry-after']).toBeUndefined();
        }
        expect(llm.requests.length - before).toBe(2);
        expect((await ledger(user.id)).map((r) => [r.kind, r.delta])).toEqual(refundedTwice);
        expect(await balance(user.id)).toBe(50);
      },
    );

    it.each([
      [
        'the renderer’s wording',
        'renderer.chat-completion.error-prompt-plus-max-tokens-over-context',
        'input_tokens',
      ],
      [
        'the wording of _validate_input',
        'serving.chat-completion.error-prompt-plus-max-tokens-over-context',
        'max_tokens',
      ],
    ])(
      'vLLM’s refusal of a prompt that fits the window but not with max_tokens (%s): 502 for our default, 400 for the caller’s',
      async (_name, name, param) => {
        const { user, auth } = await customer(50);
        const rejection = fixture<{ error: { message: string } }>('vllm', name);
        llm.behaviour = { kind: 'status', status: 400, body: rejection };

        // The prompt (3,500 tokens) fits the 4,096-token window: our default max_tokens left it no room.
        const logsBefore = env.logs.lines.length;
        const defaulted = await complete(auth, { messages: MESSAGES });
        expect(llm.requests.at(-1)!.body.max_tokens).toBe(1024);
        expect(defaulted.status).toBe(502);
        expect(problem(defaulted)).toMatchObject({ status: 502, code: 'upstream_error' });
        expect(problem(defaulted).provider_error).toBeUndefined();
        expect(defaulted.text).not.toContain('3500');
        expect(errorLogged(logsBefore, 'default max_tokens', 'input tokens')).toMatchObject({
          level: 50,
          provider_status: 400,
          provider_type: 'BadRequestError',
          provider_param: param,
          code: 'upstream_error',
        });

        // The same refusal of the caller's own max_tokens is theirs to fix.
        const chosen = await complete(auth, { messages: MESSAGES, max_tokens: 1024 });
        expect(chosen.status).toBe(400);
        expect(problem(chosen)).toMatchObject({
          code: 'completion_rejected',
          provider_error: { status: 400, type: 'BadRequestError', code: '400', param },
        });
        expect(problem(chosen).detail).toContain(rejection.error.message);
        expect((await ledger(user.id)).map((r) => [r.kind, r.delta])).toEqual(refundedTwice);
        expect(await balance(user.id)).toBe(50);
      },
    );

    it('OpenAI’s 429 insufficient_quota (our account is out of money): 502 upstream_error, no Retry-After, logged as an error naming the code', async () => {
      const { user, auth } = await customer(50);
      llm.behaviour = {
        kind: 'status',
        status: 429,
        headers: { 'retry-after': '1' },
        body: fixture('openai', 'chat-completion.error-insufficient-quota'),
      };
      const logsBefore = env.logs.lines.length;
      const before = llm.requests.length;
      const res = await complete(auth, { messages: MESSAGES, max_tokens: 970 });
      expect(res.status).toBe(502);
      // No retry: out of quota clears only when someone pays.
      expect(llm.requests.length - before).toBe(1);
      const body = problem(res);
      expect(body).toMatchObject({ status: 502, code: 'upstream_error' });
      expect(res.headers['retry-after']).toBeUndefined();
      expect(JSON.stringify(body)).not.toMatch(/quota/);
      await expectRefunded(user.id, 50);
      expect(
        errorLogged(logsBefore, 'out of quota (insufficient_quota)', 'exceeded your current quota'),
      ).toMatchObject({
        level: 50,
        provider_status: 429,
        provider_type: 'insufficient_quota',
        provider_code: 'insufficient_quota',
        code: 'upstream_error',
      });
    });

    it.each([401, 403, 404])(
      'a %i is our misconfiguration: 502 upstream_error without the provider’s text, no retry',
      async (status) => {
        const { user, auth } = await customer(50);
        llm.behaviour = {
          kind: 'status',
          status,
          body: {
            error: {
              message: 'Incorrect API key provided: sk-test****-llm',
              type: 'invalid_request_error',
              param: null,
              code: 'invalid_api_key',
            },
          },
        };
        const before = llm.requests.length;
        const logsBefore = env.logs.lines.length;
        const res = await complete(auth, { messages: MESSAGES, max_tokens: 970 });
        expect(res.status).toBe(502);
        const body = problem(res);
        expect(body).toMatchObject({ status: 502, code: 'upstream_error' });
        expect(JSON.stringify(body)).not.toMatch(/Incorrect API key|invalid_api_key|sk-test/);
        expect(body.provider_error).toBeUndefined();
        expect(llm.requests.length - before).toBe(1);
        await expectRefunded(user.id, 50);
        // Logged for the operators as an error naming the provider's status and code, never its message.
        const written = env.logs.lines.slice(logsBefore);
        const logged = written.find((line) => line.includes('check LLM_API_KEY'));
        expect(logged).toBeDefined();
        expect(JSON.parse(logged!)).toMatchObject({
          level: 50,
          provider_status: status,
          provider_type: 'invalid_request_error',
          provider_code: 'invalid_api_key',
          code: 'upstream_error',
        });
        expect(written.join('\n')).not.toContain('Incorrect API key');
      },
    );
  });

  it('refunds and answers 502 when the response breaks the contract', async () => {
    const { user, auth } = await customer(50);
    llm.behaviour = { kind: 'invalid' };
    const res = await complete(auth, { messages: MESSAGES, max_tokens: 970 });
    expect(res.status).toBe(502);
    expect(res.body.code).toBe('upstream_invalid_response');
    expect(await balance(user.id)).toBe(50);
  });

  // A timeout or a cut connection on every attempt, before the headers or while the body is read, is
  // "unreachable" (credits.md): 3 attempts, then 503 upstream_unreachable and the reservation refunded.
  it.each([
    ['times out before the headers', { kind: 'slow', ms: 3000 }],
    ['stalls after the headers (the timeout covers the body)', { kind: 'cut-body', then: 'stall' }],
    ['resets the connection mid-body', { kind: 'cut-body', then: 'reset' }],
  ] satisfies [string, LlmBehaviour][])(
    'refunds and answers 503 after 3 attempts when the provider %s',
    async (_name, behaviour) => {
      const config = env.configWith({ HTTP_TIMEOUT_MS: '300' });
      config.project = { ...config.project, creditsPer1kTokens: 10 };
      const slowApi = await env.startApi({ config });
      slowApi.app.get(HttpClient).backoffBaseMs = 1;
      const { user, auth } = await customer(50);
      llm.behaviour = behaviour;
      const before = llm.requests.length;
      const res = await slowApi.http
        .post('/api/v1/ai/completions')
        .set('Authorization', auth)
        .send({ messages: MESSAGES, max_tokens: 970 });
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ status: 503, code: 'upstream_unreachable' });
      expect(res.headers['retry-after']).toBeDefined();
      expect(llm.requests.length - before).toBe(3);
      expect(await balance(user.id)).toBe(50);
      expect((await ledger(user.id)).map((r) => [r.kind, r.delta])).toEqual([
        ['grant', 50],
        ['spend', -10],
        ['refund', 10],
      ]);
      expect(await slowApi.prisma.creditHold.count({ where: { userId: user.id } })).toBe(0);
    },
  );

  it('answers 402 with balance and required when the reservation is not covered, without calling the model', async () => {
    const { user, auth } = await customer(9);
    const before = llm.requests.length;
    const res = await complete(auth, { messages: MESSAGES, max_tokens: 970 });
    expect(res.status).toBe(402);
    expect(res.body).toMatchObject({ status: 402, code: 'insufficient_credits', balance: 9, required: 10 });
    // The request was counted: its RateLimit headers travel on the error too.
    expect(res.headers['ratelimit-limit']).toBe('60');
    expect(llm.requests.length).toBe(before);
    expect(await balance(user.id)).toBe(9);
  });

  it('refuses max_tokens above the tier limit and malformed bodies with 400, charging nothing', async () => {
    const { user, auth } = await customer(1000);
    const tooMany = await complete(auth, { messages: MESSAGES, max_tokens: 4097 });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.code).toBe('max_tokens_exceeded');
    for (const body of [
      { messages: [] },
      { messages: [{ role: 'tool', content: 'x' }] },
      { messages: MESSAGES, max_tokens: 0 },
      { messages: MESSAGES, base_url: 'http://evil.example' },
      { messages: [{ role: 'user', content: 'x', url: 'http://evil.example' }] },
    ]) {
      expect((await complete(auth, body)).status).toBe(400);
    }
    expect(await balance(user.id)).toBe(1000);
  });

  it('refuses a nested array in messages with a 400 naming the field, charging nothing (it was a 500)', async () => {
    const { user, auth } = await customer(1000);
    const before = llm.requests.length;
    for (const messages of [
      [[{ role: 'user', content: 'hi' }]],
      [[]],
      [{ role: 'user', content: 'hi' }, [{ role: 'user', content: 'x' }]],
    ]) {
      const res = await complete(auth, { messages });
      expect({ messages, status: res.status, type: res.headers['content-type'] }).toEqual({
        messages,
        status: 400,
        type: expect.stringMatching(/^application\/problem\+json/),
      });
      expect(res.body).toMatchObject({ code: 'validation_failed' });
      expect(res.body.errors).toContainEqual({
        field: 'messages',
        message: 'each value in messages must be an object',
      });
    }
    expect(llm.requests.length).toBe(before);
    expect(await balance(user.id)).toBe(1000);
    expect((await ledger(user.id)).map((r) => r.kind)).toEqual(['grant']);
  });

  it('names the type a field should have, alone, when a value is of another type', async () => {
    const { auth } = await customer(1000);
    // An array where a string belongs failed the length checks too, and those came first:
    // "content must be shorter than or equal to 100000 characters" for a one-element array.
    for (const content of [['a'], 7, { text: 'a' }]) {
      const res = await complete(auth, { messages: [{ role: 'user', content }] });
      expect({ content, status: res.status, errors: res.body.errors }).toEqual({
        content,
        status: 400,
        errors: [{ field: 'messages.0.content', message: 'content must be a string' }],
      });
      expect(res.body.detail).toBe('content must be a string');
    }
    const tokens = await complete(auth, { messages: [{ role: 'user', content: 'hi' }], max_tokens: '5x' });
    expect(tokens.body.errors).toEqual([
      { field: 'max_tokens', message: 'max_tokens must be an integer number' },
    ]);
  });

  it('takes the large body limit on every path Express routes to the handler (trailing slash, any case)', async () => {
    const { auth } = await customer(5000);
    // Over the 64 KB default, under the completions route's large limit.
    const body = { messages: [{ role: 'user', content: 'a'.repeat(70_000) }], max_tokens: 10 };
    for (const path of ['/api/v1/ai/completions/', '/API/V1/AI/Completions', '/Api/v1/ai/completions/']) {
      const res = await api.http.post(path).set('Authorization', auth).send(body);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      expect(res.body.credits_charged).toBeGreaterThan(0);
    }
  });

  it('requires authentication', async () => {
    expect((await api.http.post('/api/v1/ai/completions').send({ messages: MESSAGES })).status).toBe(401);
  });

  // DESIGN 5c: a spend that takes the balance below LOW_BALANCE_PERCENT (10) of the tier's monthly credits
  // (PRO: 1000, so 100) sends one low_balance e-mail per period. The reservation is only an upper bound of
  // the call's cost: the rule is decided on what the call really charged, when it is settled or refunded.
  describe('low-balance alert: decided on the settled cost, never on the reservation', () => {
    /** The low_balance outbox jobs of a user: written in the transaction that decided them. */
    const alerts = async (userId: string) =>
      (await api.prisma.outboxEntry.findMany({ where: { jobName: 'send-email' } })).filter((e) => {
        const payload = e.payload as { userId?: string; templateKey?: string };
        return payload.userId === userId && payload.templateKey === 'low_balance';
      });

    it('sends none when the reservation dips below the line but the settle ends above it', async () => {
      const { user, auth } = await customer(105);
      // Reserved 10 (105 -> 95, below 100), charged 2: the settle leaves 103.
      llm.behaviour = { kind: 'ok', usage: { prompt_tokens: 20, completion_tokens: 180 } };
      const res = await complete(auth, { messages: MESSAGES, max_tokens: 970 });
      expect(res.status).toBe(200);
      expect(res.body.credits_charged).toBe(2);
      expect((await ledger(user.id)).map((r) => [r.kind, r.delta])).toEqual([
        ['grant', 105],
        ['spend', -10],
        ['settle', 8],
      ]);
      expect(await balance(user.id)).toBe(103);
      expect(await alerts(user.id)).toEqual([]);
    });

    it('sends exactly one when the settled cost really takes the balance below the line', async () => {
      const { user, auth } = await customer(108);
      // 108 -> 106 (reserved 10, down to 98 for the call; charged 2): above the line, no alert.
      llm.behaviour = { kind: 'ok', usage: { prompt_tokens: 20, completion_tokens: 180 } };
      expect((await complete(auth, { messages: MESSAGES, max_tokens: 970 })).status).toBe(200);
      expect(await balance(user.id)).toBe(106);
      expect(await alerts(user.id)).toEqual([]);
      // 106 -> 96 (reserved 10, charged 10): this call really crosses the line.
      llm.behaviour = { kind: 'ok', usage: { prompt_tokens: 30, completion_tokens: 970 } };
      const crossing = await complete(auth, { messages: MESSAGES, max_tokens: 970 });
      expect(crossing.body.credits_charged).toBe(10);
      expect(await balance(user.id)).toBe(96);
      const [alert, ...more] = await alerts(user.id);
      expect(more).toEqual([]);
      expect(alert.payload).toMatchObject({
        userId: user.id,
        templateKey: 'low_balance',
        data: { balance: 96, tier: 'PRO' },
      });
      // Further spends below the line in the same period add nothing.
      expect((await complete(auth, { messages: MESSAGES, max_tokens: 970 })).status).toBe(200);
      expect(await balance(user.id)).toBe(86);
      expect(await alerts(user.id)).toHaveLength(1);
    });

    it('sends none for a failed call (model 500, the reservation refunded)', async () => {
      const { user, auth } = await customer(105);
      llm.behaviour = { kind: 'status', status: 500 };
      const res = await complete(auth, { messages: MESSAGES, max_tokens: 970 });
      expect(res.status).toBe(503);
      expect((await ledger(user.id)).map((r) => [r.kind, r.delta])).toEqual([
        ['grant', 105],
        ['spend', -10],
        ['refund', 10],
      ]);
      expect(await alerts(user.id)).toEqual([]);
    });
  });

  describe('Idempotency-Key', () => {
    it('charges a retried request once and replays its response', async () => {
      const { user, auth } = await customer(100);
      const before = llm.requests.length;
      const first = await complete(auth, { messages: MESSAGES, max_tokens: 970 }, 'retry-1');
      const second = await complete(auth, { messages: MESSAGES, max_tokens: 970 }, 'retry-1');
      expect(first.status).toBe(200);
      expect(second.status).toBe(200);
      expect(second.body).toEqual(first.body);
      expect(second.headers['idempotent-replayed']).toBe('true');
      expect(first.body.id).toBe(`ai-${user.id}-retry-1`);
      expect(llm.requests.length - before).toBe(1);
      expect(
        await api.prisma.creditTransaction.count({ where: { jobId: first.body.id, kind: 'spend' } }),
      ).toBe(1);
      expect(await balance(user.id)).toBe(100 - first.body.credits_charged);
      // Another user's identical key is another job.
      const other = await customer(100);
      const theirs = await complete(other.auth, { messages: MESSAGES, max_tokens: 970 }, 'retry-1');
      expect(theirs.status).toBe(200);
      expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    });

    it('answers 409 request_in_progress to a concurrent retry, charging once', async () => {
      const { user, auth } = await customer(100);
      llm.behaviour = { kind: 'held' };
      const first = complete(auth, { messages: MESSAGES, max_tokens: 970 }, 'concurrent-1').then((r) => r);
      await llm.waitForHeld(1);
      const second = await complete(auth, { messages: MESSAGES, max_tokens: 970 }, 'concurrent-1');
      expect(second.status).toBe(409);
      expect(second.body.code).toBe('request_in_progress');
      llm.release();
      expect((await first).status).toBe(200);
      expect(await api.prisma.creditTransaction.count({ where: { userId: user.id, kind: 'spend' } })).toBe(1);
    });

    it('refuses the same key with another body (422) and a failed key (409), and malformed keys (400)', async () => {
      const { user, auth } = await customer(100);
      await complete(auth, { messages: MESSAGES, max_tokens: 970 }, 'k-body').expect(200);
      const changed = await complete(auth, { messages: MESSAGES, max_tokens: 971 }, 'k-body');
      expect(changed.status).toBe(422);
      expect(changed.body.code).toBe('idempotency_key_mismatch');

      llm.behaviour = { kind: 'status', status: 503 };
      expect((await complete(auth, { messages: MESSAGES, max_tokens: 970 }, 'k-failed')).status).toBe(503);
      llm.behaviour = { kind: 'ok' };
      const retried = await complete(auth, { messages: MESSAGES, max_tokens: 970 }, 'k-failed');
      expect(retried.status).toBe(409);
      expect(retried.body.code).toBe('idempotency_key_reused');

      for (const key of ['has space', 'x'.repeat(129), 'semi;colon']) {
        const res = await complete(auth, { messages: MESSAGES, max_tokens: 970 }, key);
        expect(res.status).toBe(400);
        expect(res.body.code).toBe('invalid_idempotency_key');
      }
      // The structured-header form ("...") names the same key as the bare token.
      const quoted = await complete(auth, { messages: MESSAGES, max_tokens: 970 }, '"k-body"');
      expect(quoted.headers['idempotent-replayed']).toBe('true');
      const spends = await api.prisma.creditTransaction.count({ where: { userId: user.id, kind: 'spend' } });
      expect(spends).toBe(2);
    });
  });
});
