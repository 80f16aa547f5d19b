import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { HttpClient } from '../../src/infra/http/http-client.js';
import type { User } from '../../src/generated/prisma/client.js';
import { addMonths } from '../../src/modules/billing/jobs/allowance-months.js';
import { CreditsService } from '../../src/modules/credits/credits.service.js';
import { MeteredCreditsService } from '../../src/modules/credits/metered-credits.service.js';
import { createUser } from '../factories/user.factory.js';
import { fixture } from '../contracts/contract-support.js';
import { FakeLlmServer } from '../fakes/llm-server.js';
import {
  checkoutToken,
  deliver,
  newEventId,
  newSubId,
  PRICE,
  subscriptionEvent,
  transactionEvent,
} from '../support/billing.js';
import { expectLedgerConsistent, grantCredits } from '../support/credits.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

// Adversarial audit of the credit ledger (2026-12-07): "a credit is never granted or spent twice, nor
// lost to ordering". Real PostgreSQL, Redis, worker and a local OpenAI-compatible server.

const MESSAGES = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Say hello.' },
];

describe('credits audit: races, reservations and ordering', () => {
  let env: TestEnv;
  let api: ApiApp;
  let llm: FakeLlmServer;
  let users = 0;

  beforeAll(async () => {
    llm = await FakeLlmServer.start();
    env = await TestEnv.create({
      env: {
        LLM_BASE_URL: llm.baseUrl,
        LLM_API_KEY: 'sk-test-llm',
        LLM_MODEL: 'fake-1',
        CREDIT_ROLLOVER: 'PRO:none,TEAM:cap:2000',
      },
    });
    const config = env.configWith({});
    config.project = { ...config.project, creditsPer1kTokens: 10 };
    api = await env.startApi({ config });
    api.app.get(HttpClient).backoffBaseMs = 1;
    await env.startWorker();
  });
  afterEach(async () => {
    llm.release();
    llm.behaviour = { kind: 'ok' };
    await expectLedgerConsistent(api.prisma);
  });
  afterAll(async () => {
    await env.close();
    await llm.close();
  });

  async function customer(credits: number): Promise<{ user: User; auth: string }> {
    users += 1;
    const sub = `user_audit_${users}_${randomUUID().slice(0, 8)}`;
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
  const balance = async (userId: string) =>
    (await api.prisma.user.findUniqueOrThrow({ where: { id: userId } })).creditBalance;

  /** Every metered job of the user: one spend, then exactly one of settle or refund, and no open hold. */
  async function expectEveryCallClosedOnce(userId: string) {
    const rows = await api.prisma.creditTransaction.findMany({ where: { userId } });
    const jobs = new Map<string, string[]>();
    for (const r of rows.filter((r) => r.jobId.startsWith('ai-'))) {
      jobs.set(r.jobId, [...(jobs.get(r.jobId) ?? []), r.kind].sort());
    }
    for (const [jobId, kinds] of jobs) {
      expect([jobId, kinds]).toEqual([jobId, expect.arrayContaining(['spend'])]);
      expect([jobId, kinds.length]).toEqual([jobId, 2]);
    }
    expect(await api.prisma.creditHold.count({ where: { userId } })).toBe(0);
  }

  it('concurrent calls of one user never spend more than the balance held', async () => {
    const { user, auth } = await customer(55);
    llm.behaviour = { kind: 'ok', usage: { prompt_tokens: 500, completion_tokens: 500 } };
    // Each call reserves 10 credits and is charged 10.
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => complete(auth, { messages: MESSAGES, max_tokens: 970 })),
    );
    const ok = answers.filter((a) => a.status === 200);
    expect(answers.every((a) => a.status === 200 || a.status === 402)).toBe(true);
    expect(ok.length).toBe(5);
    expect(await balance(user.id)).toBe(5);
    await expectEveryCallClosedOnce(user.id);
  });

  it('settles a call whose client disconnected exactly once', async () => {
    const { user, auth } = await customer(100);
    llm.behaviour = { kind: 'held' };
    const gone = complete(auth, { messages: MESSAGES, max_tokens: 970 })
      .timeout(300)
      .then(
        () => 'answered',
        () => 'aborted',
      );
    await llm.waitForHeld(1);
    expect(await gone).toBe('aborted');
    llm.release();
    await waitFor(async () => (await api.prisma.creditHold.count({ where: { userId: user.id } })) === 0);
    const rows = await api.prisma.creditTransaction.findMany({ where: { userId: user.id } });
    expect(rows.map((r) => r.kind).sort()).toEqual(['grant', 'settle', 'spend']);
    expect(await balance(user.id)).toBeLessThan(100);
    await expectEveryCallClosedOnce(user.id);
  });

  it('the same Idempotency-Key sent concurrently with different bodies is charged once', async () => {
    const { user, auth } = await customer(1000);
    llm.behaviour = { kind: 'held' };
    const first = complete(auth, { messages: MESSAGES, max_tokens: 970 }, 'race-key');
    const firstDone = first.then((r) => r);
    await llm.waitForHeld(1);
    const others = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        complete(auth, { messages: MESSAGES, max_tokens: i % 2 === 0 ? 970 : 900 + i }, 'race-key'),
      ),
    );
    llm.release();
    expect((await firstDone).status).toBe(200);
    for (const [i, res] of others.entries()) {
      expect([i, res.status, res.body.code]).toEqual(
        i % 2 === 0 ? [i, 409, 'request_in_progress'] : [i, 422, 'idempotency_key_mismatch'],
      );
    }
    // Sequentially afterwards: the same body is replayed, another body refused.
    const replay = await complete(auth, { messages: MESSAGES, max_tokens: 970 }, 'race-key');
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect((await complete(auth, { messages: MESSAGES, max_tokens: 971 }, 'race-key')).status).toBe(422);
    expect(await api.prisma.creditTransaction.count({ where: { userId: user.id, kind: 'spend' } })).toBe(1);
    await expectEveryCallClosedOnce(user.id);
  });

  it('rejects bad amounts and shapes with 400, never 500', async () => {
    const { auth } = await customer(100);
    const bodies: unknown[] = [
      { messages: MESSAGES, max_tokens: -1 },
      { messages: MESSAGES, max_tokens: 0 },
      { messages: MESSAGES, max_tokens: 1.5 },
      { messages: MESSAGES, max_tokens: '10' },
      { messages: MESSAGES, max_tokens: 1e300 },
      { messages: MESSAGES, max_tokens: Number.MAX_SAFE_INTEGER + 2 },
      { messages: MESSAGES, max_tokens: null, extra: 1 },
      { messages: [] },
      { messages: 'hello' },
      { messages: [{ role: 'user', content: 5 }] },
      { messages: [{ role: 'tool', content: 'x' }] },
      {},
      [],
    ];
    for (const body of bodies) {
      const res = await complete(auth, body as object);
      expect([JSON.stringify(body), res.status]).toEqual([JSON.stringify(body), 400]);
    }
    for (const query of ['page=-1', 'page_size=1e9', 'page=abc', 'page_size=2.5']) {
      const res = await api.http.get(`/api/v1/credits?${query}`).set('Authorization', auth);
      expect([query, res.status]).toEqual([query, 200]);
    }
  });

  it('keeps every call closed once and the ledger consistent over a random run', async () => {
    const { user, auth } = await customer(400);
    const behaviours = [
      { kind: 'ok', usage: { prompt_tokens: 100, completion_tokens: 200 } },
      { kind: 'ok', usage: { prompt_tokens: 5000, completion_tokens: 5000 } },
      { kind: 'status', status: 500 },
      { kind: 'status', status: 400 },
      { kind: 'invalid' },
    ] as const;
    let seed = 7;
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    for (let round = 0; round < 8; round += 1) {
      llm.behaviour = behaviours[next(behaviours.length)];
      const answers = await Promise.all(
        Array.from({ length: 8 }, () => {
          const key = next(3) === 0 ? `rnd-${next(4)}` : undefined;
          return complete(auth, { messages: MESSAGES, max_tokens: 900 + next(3) * 35 }, key);
        }),
      );
      for (const a of answers) expect([200, 400, 402, 409, 422, 429, 502, 503]).toContain(a.status);
    }
    await expectEveryCallClosedOnce(user.id);
    // Whole ledger: no metered job ever ends with credits given back beyond its reservation.
    const gained = await api.prisma.$queryRaw<{ job_id: string }[]>`
      SELECT job_id FROM credit_transactions WHERE job_id LIKE 'ai-%'
      GROUP BY job_id HAVING SUM(delta) > 0 OR COUNT(*) FILTER (WHERE kind = 'spend') <> 1
        OR COUNT(*) FILTER (WHERE kind IN ('settle', 'refund')) > 1`;
    expect(gained).toEqual([]);
  });

  describe('a reservation open across the renewal (rollover none and cap)', () => {
    async function subscribedPro(tier: 'PRO' | 'TEAM' = 'PRO') {
      const u = await createUser(api.prisma);
      const subId = newSubId();
      const start = new Date(Date.now() - 86_400_000);
      const event = subscriptionEvent({
        type: 'subscription.created',
        subId,
        priceId: PRICE[tier],
        token: checkoutToken(api, u, tier),
        occurredAt: start,
        periodStart: start,
        periodEnd: addMonths(start, 1),
      });
      expect((await deliver(api, event)).outcome).toBe('processed');
      return { user: u, subId };
    }

    it.each([
      ['refunded', 0],
      ['settled', 100],
    ])(
      'does not give back, after the renewal, plan credits of the closed allowance (%s)',
      async (_how, cost) => {
        const { user: u, subId } = await subscribedPro();
        expect(await balance(u.id)).toBe(1000);
        const metered = api.app.get(MeteredCreditsService);
        const spent = await metered.reserve({ userId: u.id, amount: 400, jobId: `ai-${randomUUID()}` });
        await metered.settle(spent.spend.jobId, 400);
        const open = await metered.reserve({ userId: u.id, amount: 600, jobId: `ai-${randomUUID()}` });
        // The renewal closes the first allowance (none: its unspent plan credits expire) while 600 are held.
        const renewal = transactionEvent({ subId, priceId: PRICE.PRO, total: '1500' });
        expect((await deliver(api, renewal)).outcome).toBe('processed');
        if (cost === 0) await metered.refund(open.spend.jobId, 'provider_failed');
        else await metered.settle(open.spend.jobId, cost);
        // The old allowance's 1000: 400 + `cost` spent, the rest expired. Only the new allowance is left.
        expect(await balance(u.id)).toBe(1000);
      },
    );

    it('a claw-back of the closed allowance’s payment never takes again what expired after the close', async () => {
      const { user: u, subId } = await subscribedPro();
      const metered = api.app.get(MeteredCreditsService);
      const first = transactionEvent({ subId, priceId: PRICE.PRO, total: '1500' });
      expect((await deliver(api, first)).outcome).toBe('processed');
      expect(await balance(u.id)).toBe(1000);
      const spent = await metered.reserve({ userId: u.id, amount: 400, jobId: `ai-${randomUUID()}` });
      await metered.settle(spent.spend.jobId, 400);
      const open = await metered.reserve({ userId: u.id, amount: 600, jobId: `ai-${randomUUID()}` });
      const second = transactionEvent({ subId, priceId: PRICE.PRO, total: '1500' });
      expect((await deliver(api, second)).outcome).toBe('processed');
      await metered.refund(open.spend.jobId, 'provider_failed');
      expect(await balance(u.id)).toBe(1000);
      // The first renewal's payment refunded in full: of its 1000, 400 were spent and 600 expired late.
      const refund = fixture('paddle', 'node-sdk.adjustment-updated') as {
        event_id: string;
        occurred_at: string;
        data: Record<string, unknown> & { totals: Record<string, unknown> };
      };
      refund.event_id = newEventId();
      refund.occurred_at = new Date().toISOString();
      Object.assign(refund.data, {
        id: `adj_${randomUUID().slice(0, 12)}`,
        transaction_id: first.data.id,
        subscription_id: subId,
        customer_id: `ctm_${subId}`,
        action: 'refund',
        type: 'full',
        status: 'approved',
        created_at: new Date(Date.now() - 60_000).toISOString(),
        updated_at: new Date().toISOString(),
      });
      refund.data.totals = { ...refund.data.totals, total: '1500' };
      expect((await deliver(api, refund)).outcome).toBe('processed');
      const clawed = await api.prisma.creditTransaction.findMany({
        where: { userId: u.id, kind: 'clawback' },
      });
      expect(clawed.map((r) => r.delta)).toEqual([-400]);
      expect(await balance(u.id)).toBe(600);
    });

    it('a catch-up allowance closes nothing: what a call gives back after it stays, even while it settles', async () => {
      const credits = api.app.get(CreditsService);
      const metered = api.app.get(MeteredCreditsService);
      const u = await createUser(api.prisma);
      const start = new Date(Date.now() - 40 * 86_400_000);
      const month = (index: number) => ({
        userId: u.id,
        tier: 'PRO',
        amount: 1000,
        jobId: `allowance:sub_audit_${u.id}:${start.toISOString()}:${index}`,
        startsAt: addMonths(start, index),
        endsAt: addMonths(start, index + 1),
      });
      await api.prisma.$transaction((tx) => credits.grantAllowance(tx, month(0)));
      const refunded = await metered.reserve({ userId: u.id, amount: 600, jobId: `ai-${randomUUID()}` });
      const settled = await metered.reserve({ userId: u.id, amount: 300, jobId: `ai-${randomUUID()}` });
      // Month 1 caught up while one call settles: no deadlock, and neither call's credits expire.
      await Promise.all([
        api.prisma.$transaction((tx) => credits.grantAllowance(tx, { ...month(1), catchUp: true })),
        metered.settle(settled.spend.jobId, 100),
      ]);
      await metered.refund(refunded.spend.jobId, 'provider_failed');
      expect(await api.prisma.creditTransaction.count({ where: { userId: u.id, kind: 'expiry' } })).toBe(0);
      expect(await balance(u.id)).toBe(1900);
    });

    it('cap: expires what the given-back credits add beyond the cap, once, also through the reconciler', async () => {
      const { user: u, subId } = await subscribedPro('TEAM');
      expect(await balance(u.id)).toBe(5000);
      const metered = api.app.get(MeteredCreditsService);
      const open = await metered.reserve({ userId: u.id, amount: 4000, jobId: `ai-${randomUUID()}` });
      // 1000 unspent at the renewal: under the cap of 2000, nothing expires then.
      const renewal = transactionEvent({ subId, priceId: PRICE.TEAM, total: '5000' });
      expect((await deliver(api, renewal)).outcome).toBe('processed');
      expect(await balance(u.id)).toBe(6000);
      // The reconciler's refund (an orphaned hold) and a late settle: one closing row, one expiry.
      await api.prisma.$executeRaw`UPDATE credit_holds SET created_at = now() - interval '10 minutes'
        WHERE job_id = ${open.spend.jobId}`;
      await Promise.all([
        metered.refund(open.spend.jobId, 'orphaned', 300_000),
        metered.settle(open.spend.jobId, 5),
      ]);
      const rows = await api.prisma.creditTransaction.findMany({ where: { jobId: open.spend.jobId } });
      expect(rows.filter((r) => r.kind !== 'spend')).toHaveLength(2);
      // The old allowance keeps 2000 at most; the new one adds 5000.
      const closing = rows.find((r) => r.kind === 'refund' || r.kind === 'settle')!;
      expect(['refund', 'settle']).toContain(closing.kind);
      expect(await balance(u.id)).toBe(7000);
    });
  });
});
