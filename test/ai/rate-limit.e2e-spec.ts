import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { AppConfig } from '../../src/config/app-config.js';
import type { TierLimits } from '../../src/config/project.config.js';
import { FakeLlmServer } from '../fakes/llm-server.js';
import { expectLedgerConsistent, grantCredits } from '../support/credits.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

const BODY = { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 10 };

describe('rate limits of the metered endpoint (per user, per tier, in Redis)', () => {
  let env: TestEnv;
  let api: ApiApp;
  let llm: FakeLlmServer;
  let users = 0;

  /** The env's configuration with the tiers' AI limits replaced. */
  function withLimits(config: AppConfig, limits: Record<string, Partial<TierLimits>>): AppConfig {
    const tiers = { ...config.project.tiers };
    for (const [tier, override] of Object.entries(limits)) {
      tiers[tier] = { ...tiers[tier], limits: { ...tiers[tier].limits, ...override } };
    }
    config.project = { ...config.project, tiers };
    return config;
  }

  beforeAll(async () => {
    llm = await FakeLlmServer.start();
    env = await TestEnv.create({ env: { LLM_BASE_URL: llm.baseUrl } });
    api = await env.startApi({
      config: withLimits(env.configWith({}), {
        FREE: { aiRequestsPerMinute: 3, aiRequestsPerDay: 100 },
        PRO: { aiRequestsPerMinute: 100, aiRequestsPerDay: 2 },
        TEAM: { aiRequestsPerMinute: 0 },
      }),
    });
  });
  afterAll(async () => {
    await expectLedgerConsistent(api.prisma);
    await env.close();
    await llm.close();
  });

  async function customer(tier: string, credits = 100): Promise<{ userId: string; auth: string }> {
    users += 1;
    const sub = `user_rl_${users}`;
    const auth = await api.bearer(sub);
    await api.http.get('/api/v1/credits').set('Authorization', auth).expect(200);
    const user = await api.prisma.user.update({
      where: { identityUserId: sub },
      data: { currentTier: tier },
    });
    await grantCredits(api, user.id, credits);
    return { userId: user.id, auth };
  }

  const complete = (app: ApiApp, auth: string) =>
    app.http.post('/api/v1/ai/completions').set('Authorization', auth).send(BODY);
  const spends = (userId: string) => api.prisma.creditTransaction.count({ where: { userId, kind: 'spend' } });

  it('answers 429 with Retry-After and RateLimit headers once the minute window is used up', async () => {
    const { userId, auth } = await customer('FREE');
    const remaining: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      const res = await complete(api, auth);
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-limit']).toBe('3');
      expect(res.headers['ratelimit-policy']).toBe('3;w=60, 100;w=86400');
      remaining.push(res.headers['ratelimit-remaining']);
    }
    expect(remaining).toEqual(['2', '1', '0']);
    const refused = await complete(api, auth);
    expect(refused.status).toBe(429);
    expect(refused.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(refused.body).toMatchObject({ status: 429, code: 'rate_limited' });
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(refused.headers['ratelimit-limit']).toBe('3');
    expect(refused.headers['ratelimit-remaining']).toBe('0');
    expect(Number(refused.headers['ratelimit-reset'])).toBe(retryAfter);
    // Refused before the ledger: no charge for a 429.
    expect(await spends(userId)).toBe(3);

    // Limits are per user.
    const other = await customer('FREE');
    expect((await complete(api, other.auth)).status).toBe(200);
  });

  it('enforces the daily quota of the tier and reports the window closest to exhaustion', async () => {
    const { userId, auth } = await customer('PRO');
    const first = await complete(api, auth);
    expect(first.headers['ratelimit-limit']).toBe('2');
    expect(first.headers['ratelimit-remaining']).toBe('1');
    expect((await complete(api, auth)).status).toBe(200);
    const refused = await complete(api, auth);
    expect(refused.status).toBe(429);
    expect(refused.body.detail).toMatch(/day/);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(60);
    expect(await spends(userId)).toBe(2);
  });

  it('refuses a tier whose plan has no language-model requests (403)', async () => {
    const { auth } = await customer('TEAM');
    const res = await complete(api, auth);
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('ai_not_in_plan');
  });

  it('answers 503 (not 500, never unlimited) when Redis is unreachable, charging nothing', async () => {
    const { userId, auth } = await customer('FREE');
    const broken = await env.startApi({ config: env.configWith({ REDIS_URL: 'redis://127.0.0.1:1' }) });
    const before = llm.requests.length;
    const res = await complete(broken, auth);
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ status: 503, code: 'rate_limiter_unavailable' });
    expect(llm.requests.length).toBe(before);
    expect(await spends(userId)).toBe(0);
  });
});
