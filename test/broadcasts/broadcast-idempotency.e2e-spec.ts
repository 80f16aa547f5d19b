import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { HttpClient } from '../../src/infra/http/http-client.js';
import { createAudience } from '../factories/audience.factory.js';
import { FakeEmailApi } from '../fakes/email-api.js';
import { runFinished, signupDay } from '../support/broadcast-runs.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

describe('POST /api/v1/admin/broadcasts with Idempotency-Key: one run and one dispatch per key', () => {
  let fake: FakeEmailApi;
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;
  let admin: string;

  beforeAll(async () => {
    fake = await FakeEmailApi.start();
    env = await TestEnv.create({
      env: { ...fake.env(), ADMIN_EMAILS: 'admin@example.com,second-admin@example.com' },
    });
    env.onClose(() => fake.close());
    api = await env.startApi();
    worker = await env.startWorker();
    worker.get(HttpClient).backoffBaseMs = 5;
    admin = await api.bearer('user_admin', 'admin@example.com');
  });
  afterAll(() => env.close());
  beforeEach(() => fake.reset());

  const create = (body: object, key?: string, auth = admin) => {
    const req = api.http.post('/api/v1/admin/broadcasts').set('Authorization', auth);
    return (key === undefined ? req : req.set('Idempotency-Key', key)).send(body);
  };
  /** Runs, `broadcast.queued` entries and dispatcher jobs written for one audience. */
  const written = async (audience: object) => {
    const runs = await api.prisma.broadcastRun.findMany({
      where: { audience: { equals: audience } },
      orderBy: { createdAt: 'asc' },
    });
    const ids = runs.map((r) => r.id);
    return {
      runs: ids,
      audits: await api.prisma.auditLog.count({
        where: { action: 'broadcast.queued', resourceId: { in: ids } },
      }),
      jobs: await api.prisma.outboxEntry.count({
        where: { jobId: { in: ids.map((id) => `broadcast-${id}`) } },
      }),
    };
  };
  /** How many messages the provider delivered to each member, in member order. */
  const deliveredCounts = (members: { email: string }[]) =>
    members.map((m) => fake.deliveredTo(m.email).length);

  it('creates one run for a retried request: the retry gets the original answer and nobody gets the mail twice', async () => {
    const day = signupDay(2032, 1);
    const members = await createAudience(api.prisma, 'idem-retry', 3, {
      consent: true,
      createdAt: day.createdAt,
    });
    const body = { template_key: 'newsletter', audience: day.audience, bypass_consent: false };

    const first = await create(body, 'broadcast-retry-1');
    expect(first.status).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    // A retry after a lost response, and a double-click with the same key.
    const second = await create(body, 'broadcast-retry-1');
    expect(second.status).toBe(201);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.body).toEqual(first.body);

    const run = await runFinished(api.prisma, first.body.id);
    expect(run).toMatchObject({ status: 'done', sentCount: 3 });
    // A retry after the run went out still answers the original 201, and sends nothing again.
    const late = await create(body, 'broadcast-retry-1');
    expect([late.status, late.headers['idempotent-replayed']]).toEqual([201, 'true']);
    expect(late.body).toEqual(first.body);

    expect(await written(day.audience)).toEqual({ runs: [first.body.id], audits: 1, jobs: 1 });
    expect(deliveredCounts(members)).toEqual([1, 1, 1]);
  });

  it('creates one run for concurrent requests with the same key', async () => {
    const day = signupDay(2032, 2);
    const members = await createAudience(api.prisma, 'idem-concurrent', 2, {
      consent: true,
      createdAt: day.createdAt,
    });
    const body = { template_key: 'newsletter', audience: day.audience };

    const answers = await Promise.all(
      Array.from({ length: 6 }, () => create(body, 'broadcast-double-click').then((res) => res)),
    );
    expect(answers.map((res) => res.status)).toEqual(Array(6).fill(201));
    const ids = new Set(answers.map((res) => res.body.id));
    expect(ids.size).toBe(1);
    expect(answers.filter((res) => res.headers['idempotent-replayed'] === 'true')).toHaveLength(5);

    await runFinished(api.prisma, answers[0].body.id);
    expect(await written(day.audience)).toEqual({ runs: [...ids], audits: 1, jobs: 1 });
    expect(deliveredCounts(members)).toEqual([1, 1]);
  });

  it('refuses the key with another body (422), and takes the same request written differently as a retry', async () => {
    const day = signupDay(2032, 3);
    await createAudience(api.prisma, 'idem-mismatch', 1, { consent: true, createdAt: day.createdAt });
    const first = await create(
      { template_key: 'welcome', audience: { ...day.audience, tiers: ['FREE'] } },
      'broadcast-mismatch',
    );
    expect(first.status).toBe(201);

    for (const other of [
      { template_key: 'newsletter', audience: { ...day.audience, tiers: ['FREE'] } },
      { template_key: 'welcome', audience: { ...day.audience, tiers: ['FREE', 'PRO'] } },
      { template_key: 'welcome', audience: { ...day.audience, tiers: ['FREE'] }, bypass_consent: true },
    ]) {
      const res = await create(other, 'broadcast-mismatch');
      expect([res.status, res.body.code]).toEqual([422, 'idempotency_key_mismatch']);
      expect(res.headers['content-type']).toMatch(/problem\+json/);
    }
    // The same request: bypass_consent false is its default, instants and tier lists compare normalised.
    const same = await create(
      {
        template_key: 'welcome',
        audience: {
          tiers: ['FREE', 'FREE'],
          signed_up_after: day.audience.signed_up_after.replace('.000Z', 'Z'),
          signed_up_before: day.audience.signed_up_before,
        },
        bypass_consent: false,
      },
      '"broadcast-mismatch"',
    );
    expect([same.status, same.headers['idempotent-replayed'], same.body.id]).toEqual([
      201,
      'true',
      first.body.id,
    ]);
    await runFinished(api.prisma, first.body.id);
    expect((await written({ ...day.audience, tiers: ['FREE'] })).runs).toEqual([first.body.id]);
  });

  it('refuses a malformed key with 400 invalid_idempotency_key and creates nothing', async () => {
    const before = await api.prisma.broadcastRun.count();
    for (const key of ['has space', 'x'.repeat(129), 'semi;colon', 'é']) {
      const res = await create({ template_key: 'newsletter', audience: { tiers: ['TEAM'] } }, key);
      expect([res.status, res.body.code]).toEqual([400, 'invalid_idempotency_key']);
      expect(res.headers['content-type']).toMatch(/problem\+json/);
    }
    expect(await api.prisma.broadcastRun.count()).toBe(before);
  });

  it("scopes keys to the admin: another admin's same key is another run", async () => {
    const day = signupDay(2032, 4);
    const body = { template_key: 'newsletter', audience: day.audience };
    const second = await api.bearer('user_second_admin', 'second-admin@example.com');
    const mine = await create(body, 'broadcast-shared-key');
    const theirs = await create(body, 'broadcast-shared-key', second);
    expect([mine.status, theirs.status]).toEqual([201, 201]);
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    expect(theirs.body.id).not.toBe(mine.body.id);
    expect(theirs.body.created_by).toBe('user:user_second_admin');
    await Promise.all([mine, theirs].map((res) => runFinished(api.prisma, res.body.id)));
  });

  it('keeps creating a new run per request without the header (the body has no key of its own)', async () => {
    const day = signupDay(2032, 5);
    const body = { template_key: 'newsletter', audience: day.audience };
    const a = await create(body);
    const b = await create(body);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.id).not.toBe(b.body.id);
    await Promise.all([a, b].map((res) => runFinished(api.prisma, res.body.id)));
    expect(await written(day.audience)).toMatchObject({ audits: 2, jobs: 2 });
  });
});
