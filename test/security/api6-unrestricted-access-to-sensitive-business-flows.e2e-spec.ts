/**
 * OWASP API6:2023 Unrestricted Access to Sensitive Business Flows.
 *
 * The flows worth automating against here are the ones that move money or credits, or feed the
 * business numbers. Routes covered:
 * - POST /api/v1/ai/completions (credit spending): concurrent calls can never spend more than the balance
 *   (one lock per user, the reservation is the upper bound), and a retry storm with one Idempotency-Key is
 *   charged once; the per-minute limit itself is in api4;
 * - credits cannot be farmed: a new account (just-in-time or by webhook) starts at 0 with no ledger rows,
 *   and no user route grants credits or raises the tier (only signed billing events do; api3 checks the
 *   properties, billing/webhook-ownership the signed checkout token);
 * - POST /api/v1/account/me/signup-metadata (first-touch attribution behind the acquisition and
 *   lead-magnet numbers): concurrent or repeated calls record exactly once;
 * - GET /api/v1/email/unsubscribe: a link scanner following the link changes nothing (only the POST
 *   withdraws consent);
 * - POST /api/v1/admin/broadcasts: a marketing broadcast cannot bypass consent (409).
 * Not automated (see docs/decisions/security.md): checkout abuse is the provider's (a checkout token
 * charges nobody and expires; a second checkout of a subscribed user is 409), and account
 * delete/restore churn only hurts the churning account.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { UnsubscribeTokens } from '../../src/modules/email/unsubscribe-tokens.js';
import { deliverIdentity, identityUserEvent, signIdentityEvent } from '../support/identity-webhook.js';
import { expectLedgerConsistent, grantCredits } from '../support/credits.js';
import { expectRouteTableMatches } from './support/route-table.js';
import { SecurityWorld } from './support/world.js';

const COMPLETION = { messages: [{ role: 'user', content: 'Say hello.' }], max_tokens: 16 };

describe('API6 sensitive business flows cannot be automated into abuse', () => {
  let world: SecurityWorld;

  beforeAll(async () => {
    world = await SecurityWorld.start({ worker: true });
    expectRouteTableMatches(world.api.app);
  });
  afterAll(() => world.close());

  /** A PRO user (60 completions a minute) holding `credits`. */
  async function payingUser(credits: number) {
    const u = await world.user('payer');
    await world.api.prisma.user.update({ where: { id: u.user.id }, data: { currentTier: 'PRO' } });
    await grantCredits(world.api, u.user.id, credits);
    return u;
  }

  it('never spends more than the balance, however many completions run at once', async () => {
    const { api } = world;
    const u = await payingUser(2);
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        api.http.post('/api/v1/ai/completions').set('Authorization', u.auth).send(COMPLETION),
      ),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 200, 402, 402, 402, 402, 402, 402]);
    const row = await api.prisma.user.findUniqueOrThrow({ where: { id: u.user.id } });
    expect(row.creditBalance).toBe(0);
    await expectLedgerConsistent(api.prisma);
  });

  it('charges a retry storm with one Idempotency-Key once', async () => {
    const { api } = world;
    const u = await payingUser(100);
    const key = `storm-${randomUUID()}`;
    const results = await Promise.all(
      Array.from({ length: 6 }, () =>
        api.http
          .post('/api/v1/ai/completions')
          .set('Authorization', u.auth)
          .set('Idempotency-Key', key)
          .send(COMPLETION),
      ),
    );
    for (const res of results) expect([200, 409]).toContain(res.status);
    expect(results.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(1);
    const spends = await api.prisma.creditTransaction.findMany({
      where: { userId: u.user.id, kind: 'spend' },
    });
    expect(spends).toHaveLength(1);
    // After the storm, a retry is a replay: same answer, no new charge.
    const replay = await api.http
      .post('/api/v1/ai/completions')
      .set('Authorization', u.auth)
      .set('Idempotency-Key', key)
      .send(COMPLETION);
    expect(replay.status).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(await api.prisma.creditTransaction.count({ where: { userId: u.user.id, kind: 'spend' } })).toBe(1);
  });

  it('gives new accounts nothing to farm: no credits, no tier, whatever they call', async () => {
    const { api } = world;
    const viaToken = await world.user('farmer');
    const farmed = `user_farm_${randomUUID().slice(0, 8)}`;
    const delivery = signIdentityEvent(identityUserEvent('user.created', farmed, 'farm@example.com'));
    expect((await deliverIdentity(api, delivery)).status).toBe(200);
    const viaWebhook = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: farmed } });
    for (const path of ['/api/v1/billing/checkout-token', '/api/v1/billing/checkout']) {
      expect(
        (await api.http.post(path).set('Authorization', viaToken.auth).send({ tier: 'TEAM' })).status,
      ).toBe(200);
    }
    for (const id of [viaToken.user.id, viaWebhook.id]) {
      const row = await api.prisma.user.findUniqueOrThrow({ where: { id } });
      expect(row).toMatchObject({ creditBalance: 0, currentTier: 'FREE' });
      expect(await api.prisma.creditTransaction.count({ where: { userId: id } })).toBe(0);
    }
    const me = await api.http.get('/api/v1/credits').set('Authorization', viaToken.auth);
    expect(me.body).toMatchObject({ balance: 0, total: 0 });
  });

  it('records first-touch attribution exactly once, however often it is replayed', async () => {
    const { api } = world;
    const u = await world.user('attributed');
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        api.http
          .post('/api/v1/account/me/signup-metadata')
          .set('Authorization', u.auth)
          .send({ utm_source: `source-${i}`, provenance: `lm_${i}` }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(8).fill(200));
    expect(results.filter((r) => r.body.recorded === true)).toHaveLength(1);
    const later = await api.http
      .post('/api/v1/account/me/signup-metadata')
      .set('Authorization', u.auth)
      .send({ utm_source: 'overwrite' });
    expect(later.body).toEqual({ recorded: false });
    const row = await api.prisma.user.findUniqueOrThrow({ where: { id: u.user.id } });
    expect(row.utmSource).toMatch(/^source-\d$/);
  });

  it('changes nothing when a link scanner follows the unsubscribe link', async () => {
    const { api } = world;
    const u = await world.user('scanned');
    await api.prisma.user.update({ where: { id: u.user.id }, data: { marketingConsentGiven: true } });
    const t = api.app.get(UnsubscribeTokens).sign(u.user.id);
    for (let i = 0; i < 3; i += 1) {
      const page = await api.http.get('/api/v1/email/unsubscribe').query({ t });
      expect(page.status).toBe(200);
      expect(page.headers['content-type']).toMatch(/text\/html/);
    }
    const row = await api.prisma.user.findUniqueOrThrow({ where: { id: u.user.id } });
    expect(row.marketingConsentGiven).toBe(true);
    expect(await api.prisma.emailConsentEvent.count({ where: { userId: u.user.id } })).toBe(0);
  });

  it('refuses a marketing broadcast that bypasses consent', async () => {
    const { api } = world;
    const before = await api.prisma.broadcastRun.count();
    const res = await api.http
      .post('/api/v1/admin/broadcasts')
      .set('Authorization', await world.admin())
      .send({ template_key: 'newsletter', audience: {}, bypass_consent: true });
    expect(res.status).toBe(409);
    expect(await api.prisma.broadcastRun.count()).toBe(before);
  });
});
