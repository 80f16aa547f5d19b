import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type ApiApp, TestEnv } from '../support/test-env.js';

describe('current user: /me, PATCH /me, signup metadata', () => {
  let env: TestEnv;
  let api: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
  });
  afterAll(() => env.close());

  const me = async (sub: string) =>
    api.http.get('/api/v1/me').set('Authorization', await api.bearer(sub, `${sub}@example.com`));
  const patch = async (sub: string, body: object) =>
    api.http
      .patch('/api/v1/me')
      .set('Authorization', await api.bearer(sub, `${sub}@example.com`))
      .send(body);
  const signupMetadata = async (sub: string, body: object) =>
    api.http
      .post('/api/v1/account/me/signup-metadata')
      .set('Authorization', await api.bearer(sub, `${sub}@example.com`))
      .send(body);

  describe('GET /me', () => {
    it('returns the documented shape for a new user', async () => {
      const res = await me('user_me');
      expect(res.status).toBe(200);
      const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_me' } });
      expect(res.body).toEqual({
        id: user.id,
        identity_user_id: 'user_me',
        email: 'user_me@example.com',
        current_tier: 'FREE',
        credit_balance: 0,
        marketing_consent_given: false,
        marketing_consent_at: null,
        marketing_consent_source: null,
        locale: 'en',
        attribution_recorded: false,
        deleted_at: null,
        hard_delete_after: null,
        created_at: user.createdAt.toISOString(),
        subscription: null,
      });
    });

    it('shows the credit balance and the newest subscription', async () => {
      await me('user_paid');
      const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_paid' } });
      await api.prisma.creditTransaction.create({
        data: { userId: user.id, delta: 250, kind: 'grant', jobId: 'grant-paid' },
      });
      await api.prisma.user.update({
        where: { id: user.id },
        data: { creditBalance: 250, currentTier: 'PRO' },
      });
      const periodEnd = new Date('2031-01-01T00:00:00.000Z');
      await api.prisma.subscription.create({
        data: {
          userId: user.id,
          providerSubscriptionId: 'sub_old',
          status: 'CANCELED',
          tier: 'PRO',
          priceId: 'pri_pro',
          lastEventAt: new Date(),
          createdAt: new Date(Date.now() - 86_400_000),
        },
      });
      await api.prisma.subscription.create({
        data: {
          userId: user.id,
          providerSubscriptionId: 'sub_new',
          status: 'ACTIVE',
          tier: 'PRO',
          priceId: 'pri_pro',
          currentPeriodEnd: periodEnd,
          lastEventAt: new Date(),
        },
      });
      const res = await me('user_paid');
      expect(res.body).toMatchObject({
        current_tier: 'PRO',
        credit_balance: 250,
        subscription: { status: 'ACTIVE', current_period_end: periodEnd.toISOString(), canceled_at: null },
      });
    });
  });

  describe('PATCH /me', () => {
    it('changes the locale and audits fields_changed', async () => {
      const res = await patch('user_locale', { locale: 'de-CH' });
      expect(res.status).toBe(200);
      expect(res.body.locale).toBe('de-CH');
      const [entry] = await api.prisma.auditLog.findMany({
        where: { action: 'user.updated', userId: 'user_locale' },
      });
      expect(entry).toMatchObject({ actor: 'user:user_locale', resourceType: 'user' });
      expect(entry.details).toEqual({ fields_changed: ['locale'], locale: 'de-CH' });
    });

    it('stores the locale in BCP 47 canonical case, whatever case it is sent in', async () => {
      const audits = () =>
        api.prisma.auditLog.findMany({
          where: { action: 'user.updated', userId: 'user_locale_case' },
        });
      const stored = async () =>
        (await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_locale_case' } })).locale;
      // A new user's locale is `en`.
      for (const [sent, canonical] of [
        ['FR', 'fr'],
        ['EN', 'en'],
        ['en-us', 'en-US'],
        ['ZH-HANT-tw', 'zh-Hant-TW'],
        ['de-ch-1996', 'de-CH-1996'],
        ['es-419', 'es-419'],
      ]) {
        const res = await patch('user_locale_case', { locale: sent });
        expect({ sent, status: res.status, locale: res.body.locale }).toEqual({
          sent,
          status: 200,
          locale: canonical,
        });
        expect(await stored()).toBe(canonical);
      }
      const audited = (await audits()).map((a) => (a.details as { locale: string }).locale);
      expect(audited.sort()).toEqual(['de-CH-1996', 'en', 'en-US', 'es-419', 'fr', 'zh-Hant-TW']);
      // The stored tag in another case is the same tag: nothing changes, nothing is audited.
      expect((await patch('user_locale_case', { locale: 'ES-419' })).body.locale).toBe('es-419');
      expect(await audits()).toHaveLength(6);
    });

    it('stores the replacement of a deprecated or legacy code, not the alias sent', async () => {
      const stored = async () =>
        (await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_locale_alias' } })).locale;
      // What Intl.getCanonicalLocales answers in Node 24 (CLDR 48), each the code's documented replacement.
      for (const [sent, canonical] of [
        ['iw', 'he'],
        ['IW-il', 'he-IL'],
        ['in', 'id'],
        ['ji', 'yi'],
        ['jw', 'jv'],
        ['mo', 'ro'],
        ['en-UK', 'en-GB'],
        ['sh-ba', 'sr-Latn-BA'],
        // Norwegian is not an alias (nb and nn are its written standards, not replacements).
        ['no', 'no'],
        // Intl's replacement would carry an extension (en-US-u-va-posix), which PATCH /me does not take:
        // the subtags are kept, in canonical case, so what /me shows can be sent back.
        ['EN-us-POSIX', 'en-US-posix'],
      ]) {
        const res = await patch('user_locale_alias', { locale: sent });
        expect({ sent, status: res.status, locale: res.body.locale }).toEqual({
          sent,
          status: 200,
          locale: canonical,
        });
        expect({ sent, stored: await stored() }).toEqual({ sent, stored: canonical });
        // What is stored is accepted back as it is.
        const again = await patch('user_locale_alias', { locale: canonical });
        expect({ sent, again: again.body.locale }).toEqual({ sent, again: canonical });
      }
      // The alias of the stored tag is the same language: nothing changes, nothing is audited.
      await patch('user_locale_alias', { locale: 'he' });
      const audits = () =>
        api.prisma.auditLog.count({ where: { action: 'user.updated', userId: 'user_locale_alias' } });
      const before = await audits();
      expect((await patch('user_locale_alias', { locale: 'iw' })).body.locale).toBe('he');
      expect(await audits()).toBe(before);
      const [last] = await api.prisma.auditLog.findMany({
        where: { action: 'user.updated', userId: 'user_locale_alias' },
        orderBy: { createdAt: 'desc' },
        take: 1,
      });
      expect(last.details).toEqual({ fields_changed: ['locale'], locale: 'he' });
    });

    it('canonicalizes a row stored before in another case on its next write, and only then', async () => {
      await me('user_locale_legacy');
      await api.prisma.user.update({
        where: { identityUserId: 'user_locale_legacy' },
        data: { locale: 'EN-gb' },
      });
      expect((await me('user_locale_legacy')).body.locale).toBe('EN-gb');
      const res = await patch('user_locale_legacy', { locale: 'en-GB' });
      expect(res.body.locale).toBe('en-GB');
      const [entry] = await api.prisma.auditLog.findMany({
        where: { action: 'user.updated', userId: 'user_locale_legacy' },
      });
      expect(entry.details).toEqual({ fields_changed: ['locale'], locale: 'en-GB' });
    });

    it.each([
      // Shaped like a tag, but not well-formed (Intl refuses them): they were stored as sent.
      ['en-12'],
      ['de-DE-DE'],
      ['de-1996-1996'],
      ['en-a1'],
      // An extended language subtag: Unicode locale identifiers (what Intl reads) have none; `yue` is the tag.
      ['zh-yue'],
      // Outside the shape we store: private use, extensions, `_`, grandfathered tags, empty.
      ['x-private'],
      ['en-US-u-ca-gregory'],
      ['de_AT'],
      ['i-klingon'],
      [''],
    ])('refuses the malformed locale %j with 400 problem+json and keeps the stored one', async (locale) => {
      await patch('user_locale_bad', { locale: 'fr' });
      const res = await patch('user_locale_bad', { locale });
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(res.body.code).toBe('validation_failed');
      expect(res.body.errors).toContainEqual({
        field: 'locale',
        message: 'locale must be a BCP 47 language tag such as en or de-CH',
      });
      const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_locale_bad' } });
      expect(user.locale).toBe('fr');
    });

    it('records consent at/source, the consent history and an audit entry; withdrawal too', async () => {
      const given = await patch('user_consent', {
        marketing_consent_given: true,
        marketing_consent_source: 'settings_page',
      });
      expect(given.status).toBe(200);
      expect(given.body).toMatchObject({
        marketing_consent_given: true,
        marketing_consent_source: 'settings_page',
      });
      const givenAt = Date.parse(given.body.marketing_consent_at);
      expect(Math.abs(givenAt - Date.now())).toBeLessThan(10_000);

      const withdrawn = await patch('user_consent', { marketing_consent_given: false });
      expect(withdrawn.body).toMatchObject({
        marketing_consent_given: false,
        marketing_consent_source: 'account_settings',
      });
      expect(Date.parse(withdrawn.body.marketing_consent_at)).toBeGreaterThanOrEqual(givenAt);

      const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_consent' } });
      const history = await api.prisma.emailConsentEvent.findMany({
        where: { userId: user.id },
        orderBy: { createdAt: 'asc' },
      });
      expect(history.map((h) => [h.given, h.source])).toEqual([
        [true, 'settings_page'],
        [false, 'account_settings'],
      ]);
      const entries = await api.prisma.auditLog.findMany({
        where: { action: 'user.updated', userId: 'user_consent' },
        orderBy: { createdAt: 'asc' },
      });
      expect(entries).toHaveLength(2);
      expect(entries[0].details).toEqual({
        fields_changed: ['marketing_consent_at', 'marketing_consent_given', 'marketing_consent_source'],
        consent_given: true,
        consent_at: given.body.marketing_consent_at,
        source: 'settings_page',
      });
      expect(entries[1].details).toMatchObject({ consent_given: false, source: 'account_settings' });
    });

    it('changes nothing and audits nothing when values are unchanged', async () => {
      await patch('user_same', { locale: 'fr' });
      const res = await patch('user_same', { locale: 'fr', marketing_consent_given: false });
      expect(res.status).toBe(200);
      expect(
        await api.prisma.auditLog.count({ where: { action: 'user.updated', userId: 'user_same' } }),
      ).toBe(1);
    });

    it.each([
      [{ current_tier: 'TEAM' }, 'current_tier'],
      [{ email: 'evil@example.com' }, 'email'],
      [{ credit_balance: 1_000_000 }, 'credit_balance'],
      [{ deleted_at: null }, 'deleted_at'],
      [{ utm_source: 'x' }, 'utm_source'],
    ])('refuses server-controlled or unknown field %j with 400', async (body, field) => {
      const res = await patch('user_strict', body);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('validation_failed');
      expect(res.body.errors).toContainEqual({ field, message: `property ${field} is not allowed` });
      const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_strict' } });
      expect(user).toMatchObject({ currentTier: 'FREE', email: 'user_strict@example.com', creditBalance: 0 });
    });

    it.each([
      [{ locale: 'not a locale' }],
      [{ locale: 'x'.repeat(40) }],
      [{ locale: 42 }],
      [{ locale: ['en'] }],
      [{ marketing_consent_given: 'yes' }],
      [{ marketing_consent_source: 'settings' }],
      [{ marketing_consent_given: true, marketing_consent_source: 'has spaces' }],
    ])('refuses invalid values %j', async (body) => {
      const res = await patch('user_invalid', body);
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    });
  });

  describe('POST /account/me/signup-metadata', () => {
    const attribution = {
      utm_source: 'newsletter',
      utm_medium: 'email',
      utm_campaign: 'spring',
      utm_term: 'pricing',
      utm_content: 'cta-top',
      referrer: 'https://news.example.org/article',
      landing_page: '/pricing?plan=pro',
      provenance: 'lead_magnet:pricing-guide',
    };

    it('records first-touch attribution once; later calls change nothing', async () => {
      const first = await signupMetadata('user_utm', attribution);
      expect(first.status).toBe(200);
      expect(first.body).toEqual({ recorded: true });
      const second = await signupMetadata('user_utm', { utm_source: 'google', provenance: 'organic' });
      expect(second.body).toEqual({ recorded: false });
      const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_utm' } });
      expect(user).toMatchObject({
        utmSource: 'newsletter',
        utmMedium: 'email',
        utmCampaign: 'spring',
        utmTerm: 'pricing',
        utmContent: 'cta-top',
        referrer: 'https://news.example.org/article',
        landingPage: '/pricing?plan=pro',
        provenance: 'lead_magnet:pricing-guide',
      });
      expect(user.attributionRecordedAt).not.toBeNull();
      expect((await me('user_utm')).body.attribution_recorded).toBe(true);
      const entries = await api.prisma.auditLog.findMany({
        where: { action: 'user.attribution_recorded', userId: 'user_utm' },
      });
      expect(entries).toHaveLength(1);
      // Field names only, never the visitor-supplied values.
      expect(entries[0].details).toEqual({ fields_changed: Object.keys(attribution).sort() });
    });

    it('records exactly one of many concurrent first calls', async () => {
      await me('user_utm_race');
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) => signupMetadata('user_utm_race', { utm_source: `source-${i}` })),
      );
      expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
      const winners = results.filter((r) => r.body.recorded === true);
      expect(winners).toHaveLength(1);
      const winner = results.indexOf(winners[0]);
      const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_utm_race' } });
      expect(user.utmSource).toBe(`source-${winner}`);
      expect(
        await api.prisma.auditLog.count({
          where: { action: 'user.attribution_recorded', userId: 'user_utm_race' },
        }),
      ).toBe(1);
    });

    it.each([
      ['a value over 500 characters', { utm_source: 'x'.repeat(501) }],
      ['a control character', { landing_page: 'a\u0000b' }],
      ['a number', { referrer: 42 }],
      ['a list', { provenance: ['a'] }],
      ['an owner field', { user_id: 'someone-else' }],
      ['an unknown field', { utm_source: 'ok', gclid: 'unknown field' }],
    ])('refuses %s with 400 and records nothing', async (_label, body) => {
      const res = await signupMetadata('user_utm_invalid', body);
      expect(res.status).toBe(400);
      const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_utm_invalid' } });
      expect(user.attributionRecordedAt).toBeNull();
    });

    it('accepts 500 characters exactly and an empty body (direct traffic)', async () => {
      expect((await signupMetadata('user_utm_max', { utm_campaign: 'c'.repeat(500) })).body).toEqual({
        recorded: true,
      });
      const direct = await signupMetadata('user_utm_direct', {});
      expect(direct.body).toEqual({ recorded: true });
      const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_utm_direct' } });
      expect(user).toMatchObject({ utmSource: null, provenance: null });
      expect(user.attributionRecordedAt).not.toBeNull();
    });
  });
});
