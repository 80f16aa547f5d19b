import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { TestingModuleBuilder } from '@nestjs/testing';
import { generateApiKey } from '../../src/modules/auth/api-key.util.js';
import { Clock } from '../../src/modules/admin/metrics/clock.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { ago, NOW, seedOverviewDataset } from './metrics-fixtures.js';

const OVERVIEW = '/api/v1/admin/metrics/overview';

/** A pinned clock that counts its readings (the single-time rule: one reading per response). */
class FixedClock extends Clock {
  readings = 0;
  constructor(private readonly at: Date) {
    super();
  }
  now(): Date {
    this.readings += 1;
    return new Date(this.at);
  }
}

describe('GET /admin/metrics/overview', () => {
  let env: TestEnv;
  let api: ApiApp;
  let withLeadMagnets: ApiApp;
  let clock: FixedClock;
  let ids: Record<string, string>;

  // A fresh token per request: tokens live 60 s and a slow run must not outlive them.
  const asAdmin = () => api.bearer('user_admin', 'admin@example.com');

  beforeAll(async () => {
    env = await TestEnv.create();
    clock = new FixedClock(NOW);
    const override = (b: TestingModuleBuilder) => b.overrideProvider(Clock).useValue(clock);
    api = await env.startApi({ override });
    withLeadMagnets = await env.startApi({
      override,
      config: env.configWith({ LEAD_MAGNET_PREFIXES: 'lead_magnet:lm_,ebook:lm_ebook_,podcast:pod_' }),
    });
    ids = await seedOverviewDataset(api.prisma);
  });
  afterAll(() => env.close());

  const overview = async (app: ApiApp = api) => {
    const res = await app.http.get(OVERVIEW).set('Authorization', await asAdmin());
    expect(res.status).toBe(200);
    return res.body;
  };

  it('computes everything against one reading of the clock and says when', async () => {
    const before = clock.readings;
    const body = await overview();
    expect(clock.readings - before).toBe(1);
    expect(body.generated_at).toBe(NOW.toISOString());
    expect(Object.keys(body).sort()).toEqual(
      ['acquisition', 'activity', 'credits', 'generated_at', 'lead_magnet', 'mailing', 'revenue'].sort(),
    );
  });

  it('revenue: MRR per currency and tier from ACTIVE and PAST_DUE prices, status counts, 30-day money', async () => {
    const { revenue } = await overview();
    expect(revenue).toEqual({
      amounts_in: 'minor_units',
      mrr: {
        USD: {
          // 1000 + 12000/12 + 3 x 500 + 300 x 52/12/2 + 100 x 365/12 = 7191.67 active, + 1000 past due
          total: 8192,
          active: 7192,
          past_due: 1000,
          subscriptions: 6,
          by_tier: { PRO: { amount: 6042, subscriptions: 4 }, TEAM: { amount: 2150, subscriptions: 2 } },
        },
        EUR: {
          total: 900,
          active: 900,
          past_due: 0,
          subscriptions: 1,
          by_tier: { PRO: { amount: 900, subscriptions: 1 } },
        },
      },
      unpriced_subscriptions: 2,
      packs: { sold: 0, credits: 0, revenue: {} },
      // The subscription created after NOW is nowhere; the expired PAST_DUE one is still counted by status.
      subscriptions: { active: 8, trialing: 1, past_due: 2, paused: 1, canceled: 4, total: 16 },
      last_30_days: {
        revenue: { USD: { amount: 7500, count: 2 }, EUR: { amount: 900, count: 1 } },
        refunds: { USD: { amount: 1000, count: 1 }, EUR: { amount: 200, count: 1 } },
        net: { USD: 6500, EUR: 700 },
        churned: 2,
        churned_mrr: { USD: 1000, EUR: 200 },
      },
    });
  });

  it('mailing: sends by status, unsubscribers, consent rate and the last broadcast at NOW', async () => {
    const { mailing } = await overview();
    expect(mailing).toEqual({
      last_7_days: { sent: 2, failed: 1, skipped: 1, unsubscribed: 2 },
      last_30_days: { sent: 4, failed: 2, skipped: 1, unsubscribed: 3 },
      // 4 of the 24 users that exist at NOW and are not soft-deleted
      consent_rate: 0.1667,
      consent: { consented: 4, users: 24 },
      last_broadcast: {
        id: ids.broadcast,
        status: 'running',
        template_key: 'newsletter',
        kind: 'marketing',
        created_at: ago(0, -3_600_000).toISOString(),
        started_at: ago(0, -3_500_000).toISOString(),
        finished_at: null,
        counts: { recipients: 50, sent: 20, failed: 2, skipped: 3 },
      },
      // No e-mail webhooks in this dataset: every UTC day of the window listed, all zero.
      deliverability_by_day: expect.any(Array),
      suppressed_addresses: 0,
    });
    const days = mailing.deliverability_by_day as { date: string; bounces: number }[];
    expect(days).toHaveLength(31);
    expect(days.at(-1)!.date).toBe(NOW.toISOString().slice(0, 10));
    expect(days.every((d) => d.bounces === 0)).toBe(true);
  });

  it('activity: DAU/WAU/MAU from last_active_at, boundaries exclusive, soft-deleted users left out', async () => {
    const { activity } = await overview();
    expect(activity).toEqual({ dau: 2, wau: 4, mau: 6, dau_mau_ratio: 0.3333 });
  });

  it('acquisition: signups, top 10 sources + other, disposable share; soft-deleted signups counted', async () => {
    const { acquisition } = await overview();
    expect(acquisition.last_7_days).toEqual({
      signups: 4,
      disposable: 2,
      disposable_share: 0.5,
      by_utm_source: [
        { source: 'google', signups: 3 },
        { source: 'unknown', signups: 1 },
      ],
    });
    expect(acquisition.last_30_days).toEqual({
      signups: 17,
      disposable: 3,
      disposable_share: 0.1765,
      by_utm_source: [
        { source: 'google', signups: 3 },
        { source: 'direct', signups: 1 },
        { source: 'newsletter', signups: 1 },
        ...[1, 2, 3, 4, 5, 6, 7].map((i) => ({ source: `src0${i}`, signups: 1 })),
        // src08..src11 and unknown
        { source: 'other', signups: 5 },
      ],
    });
  });

  it('lead magnets: all zeros with the default empty prefix map', async () => {
    const { lead_magnet } = await overview();
    expect(lead_magnet).toEqual({
      signups: 0,
      signups_30d: 0,
      paid_conversions: 0,
      conversion_rate: 0,
      by_prefix: {},
    });
  });

  it('lead magnets: configured prefixes count signups and paid conversions, prefixes matched literally', async () => {
    const { lead_magnet } = await overview(withLeadMagnets);
    expect(lead_magnet).toEqual({
      // lm_ebook_spring, lm_webinar, lm_ebook_x (soft-deleted), lm_ebook_autumn, lm_ebook_future
      signups: 5,
      signups_30d: 2,
      paid_conversions: 2,
      conversion_rate: 0.4,
      by_prefix: {
        lead_magnet: { prefix: 'lm_', signups: 5, signups_30d: 2, paid_conversions: 2, conversion_rate: 0.4 },
        ebook: { prefix: 'lm_ebook_', signups: 4, signups_30d: 2, paid_conversions: 2, conversion_rate: 0.5 },
        podcast: { prefix: 'pod_', signups: 0, signups_30d: 0, paid_conversions: 0, conversion_rate: 0 },
      },
    });
  });

  it('moves every window with the clock: 1 ms later the boundary rows change sides', async () => {
    const later = new FixedClock(new Date(NOW.getTime() + 1));
    const app = await env.startApi({ override: (b) => b.overrideProvider(Clock).useValue(later) });
    const res = await app.http.get(OVERVIEW).set('Authorization', await asAdmin());
    expect(res.status).toBe(200);
    const body = res.body;
    // Rows stamped NOW + 1 ms come in; rows 1 ms inside a window at NOW sit exactly on its edge and drop out.
    expect(body.generated_at).toBe(new Date(NOW.getTime() + 1).toISOString());
    expect(body.mailing.last_7_days).toEqual({ sent: 2, failed: 1, skipped: 1, unsubscribed: 3 });
    expect(body.mailing.last_30_days).toEqual({ sent: 5, failed: 2, skipped: 1, unsubscribed: 4 });
    expect(body.mailing.consent).toEqual({ consented: 5, users: 25 });
    expect(body.mailing.last_broadcast.status).toBe('queued');
    expect(body.activity).toEqual({ dau: 2, wau: 4, mau: 6, dau_mau_ratio: 0.3333 });
    expect(body.acquisition.last_7_days.signups).toBe(4);
    expect(body.acquisition.last_7_days.disposable).toBe(1);
    expect(body.acquisition.last_30_days.signups).toBe(17);
    expect(body.acquisition.last_30_days.disposable).toBe(2);
    expect(body.revenue.subscriptions.total).toBe(17);
    expect(body.revenue.last_30_days.revenue.USD).toEqual({ amount: 5000 + 1234, count: 2 });
    expect(body.revenue.last_30_days.churned).toBe(2);
    expect(body.revenue.last_30_days.churned_mrr).toEqual({ USD: 1000, EUR: 200 });
  });

  it('sends Cache-Control: private, max-age=60 (and Vary: Authorization) on the overview only', async () => {
    const res = await api.http.get(OVERVIEW).set('Authorization', await asAdmin());
    expect(res.headers['cache-control']).toBe('private, max-age=60');
    expect(res.headers.vary).toMatch(/Authorization/);
    const refused = await api.http
      .get(OVERVIEW)
      .set('Authorization', await api.bearer('user_nosy', 'nosy@example.com'));
    expect(refused.status).toBe(403);
    expect(refused.headers['cache-control']).not.toBe('private, max-age=60');
  });

  it('documents both responses in the OpenAPI document', async () => {
    const res = await api.http.get('/docs/openapi.json');
    expect(res.status).toBe(200);
    const { paths, components } = res.body;
    expect(
      paths['/api/v1/admin/metrics/overview'].get.responses['200'].content['application/json'].schema,
    ).toEqual({
      $ref: '#/components/schemas/MetricsOverviewDto',
    });
    expect(paths['/api/v1/admin/stats'].get.responses['200']).toBeDefined();
    expect(Object.keys(components.schemas.MetricsOverviewDto.properties).sort()).toEqual([
      'acquisition',
      'activity',
      'credits',
      'generated_at',
      'lead_magnet',
      'mailing',
      'revenue',
    ]);
    expect(components.schemas.RevenueSectionDto.properties.mrr.additionalProperties).toEqual({
      $ref: '#/components/schemas/MrrCurrencyDto',
    });
    // The 30-day credit totals have no `date` (only the days of by_day do): the schema says what is sent.
    const credits = await api.http
      .get(OVERVIEW)
      .set('Authorization', await asAdmin())
      .expect(200);
    const schemaOf = (property: { allOf?: { $ref: string }[]; $ref?: string }) =>
      components.schemas[(property.allOf?.[0]?.$ref ?? property.$ref)!.split('/').pop()!];
    const section = components.schemas.CreditsSectionDto.properties;
    expect(schemaOf(section.last_30_days).required.sort()).toEqual(
      Object.keys(credits.body.credits.last_30_days).sort(),
    );
    expect(schemaOf(section.by_day.items).required).toContain('date');
  });

  describe('access', () => {
    it('answers 401 without a token', async () => {
      expect((await api.http.get(OVERVIEW)).status).toBe(401);
    });

    it('refuses a non-admin with 403 admin_required and audits admin.unauthorized', async () => {
      const res = await api.http
        .get(OVERVIEW)
        .set('Authorization', await api.bearer('user_plain', 'plain@example.com'));
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ status: 403, code: 'admin_required' });
      expect(JSON.stringify(res.body)).not.toMatch(/mrr|revenue/);
      const entries = await api.prisma.auditLog.findMany({
        where: { action: 'admin.unauthorized', userId: 'user_plain' },
      });
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({ actor: 'user:user_plain', resourceType: 'route' });
      expect(entries[0].details).toMatchObject({ method: 'GET', via: 'jwt' });
      expect(String((entries[0].details as Record<string, unknown>).path)).toContain(
        'admin/metrics/overview',
      );
    });

    it('refuses an API key even when its owner is an admin', async () => {
      const owner = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_admin' } });
      const key = generateApiKey();
      await api.prisma.apiKey.create({
        data: { userId: owner.id, name: 'admin key', prefix: key.prefix, secretHash: key.secretHash },
      });
      const res = await api.http.get(OVERVIEW).set('Authorization', `Bearer ${key.key}`);
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('api_key_not_allowed');
      const entries = await api.prisma.auditLog.findMany({
        where: { action: 'admin.unauthorized', userId: 'user_admin' },
      });
      expect(entries).toHaveLength(1);
      expect(entries[0].details).toMatchObject({ via: 'api_key' });
    });
  });
});

describe('GET /admin/metrics/overview on an empty database', () => {
  let env: TestEnv;
  let api: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
  });
  afterAll(() => env.close());

  it('answers zeros (never NaN or an error) and uses the real clock by default', async () => {
    const before = Date.now();
    const res = await api.http
      .get(OVERVIEW)
      .set('Authorization', await api.bearer('user_admin', 'admin@example.com'));
    expect(res.status).toBe(200);
    const generated = Date.parse(res.body.generated_at);
    expect(generated).toBeGreaterThanOrEqual(before);
    expect(generated).toBeLessThanOrEqual(Date.now());
    expect(res.body.revenue).toEqual({
      amounts_in: 'minor_units',
      mrr: {},
      unpriced_subscriptions: 0,
      packs: { sold: 0, credits: 0, revenue: {} },
      subscriptions: { active: 0, trialing: 0, past_due: 0, paused: 0, canceled: 0, total: 0 },
      last_30_days: { revenue: {}, refunds: {}, net: {}, churned: 0, churned_mrr: {} },
    });
    // The admin's own just-in-time row is the only user; its activity mark may still be in flight.
    expect(res.body.mailing).toEqual({
      last_7_days: { sent: 0, failed: 0, skipped: 0, unsubscribed: 0 },
      last_30_days: { sent: 0, failed: 0, skipped: 0, unsubscribed: 0 },
      consent_rate: 0,
      consent: { consented: 0, users: 1 },
      last_broadcast: null,
      deliverability_by_day: expect.any(Array),
      suppressed_addresses: 0,
    });
    expect(res.body.acquisition.last_30_days).toEqual({
      signups: 1,
      disposable: 0,
      disposable_share: 0,
      by_utm_source: [{ source: 'unknown', signups: 1 }],
    });
    expect(res.body.lead_magnet).toEqual({
      signups: 0,
      signups_30d: 0,
      paid_conversions: 0,
      conversion_rate: 0,
      by_prefix: {},
    });
  });
});
