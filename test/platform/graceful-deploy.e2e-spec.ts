import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { User } from '../../src/generated/prisma/client.js';
import { FakeLlmServer } from '../fakes/llm-server.js';
import { expectLedgerConsistent, grantCredits } from '../support/credits.js';
import { freePort, type RunningProcess, startCompiled, waitForHttp } from '../support/processes.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

const CALLS = 20;
const COMPLETION = { messages: [{ role: 'user', content: 'Say hello.' }], max_tokens: 50 };

/**
 * A deploy sends SIGTERM to the compiled API while metered completions are in flight (the model holds
 * its answers). The process stops accepting connections, answers every request it already has, and
 * closes its database pool and Redis only after that: every call is charged, none is refunded.
 */
describe('API6:2023 sensitive business flows: a deploy (SIGTERM) gives no metered call away for free', () => {
  let env: TestEnv;
  let api: ApiApp;
  let llm: FakeLlmServer;
  let proc: RunningProcess;
  let base: string;
  const customers: { user: User; auth: string }[] = [];

  beforeAll(async () => {
    llm = await FakeLlmServer.start();
    env = await TestEnv.create({
      env: { LLM_BASE_URL: llm.baseUrl, LLM_API_KEY: 'sk-test-llm', LLM_MODEL: 'fake-1' },
    });
    env.onClose(() => llm.close());
    // In-process only to set up the world and read the ledger; the API under test is the process below.
    api = await env.startApi();
    for (let i = 0; i < CALLS; i += 1) {
      const user = await api.prisma.user.create({
        data: { identityUserId: `user_deploy_${i}`, email: `deploy-${i}@example.com`, currentTier: 'PRO' },
      });
      await grantCredits(api, user.id, 100);
      customers.push({ user, auth: await api.bearer(user.identityUserId, user.email) });
    }
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    proc = startCompiled('main', {
      ...env.env,
      PORT: String(port),
      LOG_LEVEL: 'warn',
      SHUTDOWN_TIMEOUT_MS: '20000',
    });
    env.onClose(async () => {
      if (proc.child.exitCode === null && proc.child.signalCode === null) {
        proc.child.kill('SIGKILL');
        await proc.exited;
      }
    });
    await waitForHttp(`${base}/health`, 20_000);
  });
  afterAll(() => env.close());

  it('answers all 20 in-flight calls, charges each once, refunds none, and only then exits 0', async () => {
    llm.behaviour = { kind: 'held' };
    const calls = customers.map(({ auth }) =>
      fetch(`${base}/api/v1/ai/completions`, {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/json' },
        body: JSON.stringify(COMPLETION),
      }).then(async (res) => ({ status: res.status, body: (await res.json()) as Record<string, unknown> })),
    );
    // Every call has reserved its credits and waits for the model.
    await llm.waitForHeld(CALLS);

    proc.child.kill('SIGTERM');
    const deadline = Date.now() + 10_000;
    while (!proc.stderr().includes('SIGTERM received') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(proc.stderr()).toContain('api: SIGTERM received');
    // No new connection is accepted while the old requests drain...
    await expect(fetch(`${base}/health`)).rejects.toThrow();
    // ...and the process waits for them instead of closing under them.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(proc.child.exitCode).toBeNull();

    llm.release();
    const answers = await Promise.all(calls);
    expect(answers.map((a) => a.status)).toEqual(Array(CALLS).fill(200));
    for (const { body } of answers) expect(body.credits_charged).toBeGreaterThan(0);
    expect(await proc.exited).toBe(0);

    const userIds = customers.map((c) => c.user.id);
    const rows = await api.prisma.creditTransaction.findMany({ where: { userId: { in: userIds } } });
    const byKind = (kind: string) => rows.filter((r) => r.kind === kind);
    expect(byKind('spend')).toHaveLength(CALLS);
    // The settle row closes each reservation at its real cost: 20 charges...
    expect(byKind('settle')).toHaveLength(CALLS);
    expect(new Set(byKind('settle').map((r) => r.jobId))).toEqual(new Set(answers.map((a) => a.body.id)));
    // ...and not one refund, no hold left for the reconciler to refund later.
    expect(byKind('refund')).toHaveLength(0);
    expect(await api.prisma.creditHold.count({ where: { userId: { in: userIds } } })).toBe(0);
    for (const { user } of customers) {
      const { creditBalance } = await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } });
      expect(creditBalance).toBeLessThan(100);
    }
    await expectLedgerConsistent(api.prisma);
  });
});
