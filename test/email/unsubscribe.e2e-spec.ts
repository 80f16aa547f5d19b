import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { UnsubscribeTokens } from '../../src/modules/email/unsubscribe-tokens.js';
import type { User } from '../../src/generated/prisma/client.js';
import { createMember } from '../factories/audience.factory.js';
import { type ApiApp, TEST_SECRETS, TestEnv } from '../support/test-env.js';
import { signedToken } from '../support/tokens.js';

describe('unsubscribe link: one-click POST (RFC 8058), confirmation page on GET, bad tokens', () => {
  let env: TestEnv;
  let api: ApiApp;
  let tokens: UnsubscribeTokens;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    tokens = api.app.get(UnsubscribeTokens);
  });
  afterAll(() => env.close());

  const path = (token: string) => `/api/v1/email/unsubscribe?t=${encodeURIComponent(token)}`;
  const reload = (user: User) => api.prisma.user.findUniqueOrThrow({ where: { id: user.id } });
  const events = (user: User) => api.prisma.emailConsentEvent.findMany({ where: { userId: user.id } });

  it('unsubscribes on a form-encoded one-click POST without a token of the identity provider, once', async () => {
    const user = await createMember(api.prisma, 'oneclick', { consent: true });
    const before = Date.now();
    const res = await api.http
      .post(path(tokens.sign(user.id)))
      .type('form')
      .send('List-Unsubscribe=One-Click');
    expect(res.status).toBe(200);
    expect(res.headers.location).toBeUndefined();
    expect(res.body).toEqual({ unsubscribed: true });

    const after = await reload(user);
    expect(after.marketingConsentGiven).toBe(false);
    expect(after.marketingConsentSource).toBe('unsubscribe_link');
    expect(after.marketingConsentAt!.getTime()).toBeGreaterThanOrEqual(before - 5);
    expect(await events(user)).toMatchObject([{ given: false, source: 'unsubscribe_link' }]);
    const audit = await api.prisma.auditLog.findMany({
      where: { action: 'email.unsubscribed', userId: user.identityUserId },
    });
    expect(audit).toHaveLength(1);
    expect(audit[0].details).toMatchObject({ source: 'unsubscribe_link', consent_given: false });

    // A second click succeeds and changes nothing.
    const again = await api.http
      .post(path(tokens.sign(user.id)))
      .type('form')
      .send('List-Unsubscribe=One-Click');
    expect(again.status).toBe(200);
    expect(await events(user)).toHaveLength(1);
    expect(
      await api.prisma.auditLog.count({
        where: { action: 'email.unsubscribed', userId: user.identityUserId },
      }),
    ).toBe(1);
  });

  it('accepts multipart and empty bodies', async () => {
    const multipart = await createMember(api.prisma, 'multipart', { consent: true });
    const res = await api.http.post(path(tokens.sign(multipart.id))).field('List-Unsubscribe', 'One-Click');
    expect(res.status).toBe(200);
    expect((await reload(multipart)).marketingConsentGiven).toBe(false);

    const empty = await createMember(api.prisma, 'empty', { consent: true });
    expect((await api.http.post(path(tokens.sign(empty.id)))).status).toBe(200);
    expect((await reload(empty)).marketingConsentGiven).toBe(false);
  });

  it('accepts a form body in any charset, us-ascii included (the body is ignored); JSON routes refuse forms', async () => {
    for (const charset of ['us-ascii', 'US-ASCII', 'utf-8', 'iso-8859-1', 'windows-1252']) {
      const user = await createMember(api.prisma, `charset-${charset.toLowerCase()}`, { consent: true });
      const res = await api.http
        .post(path(tokens.sign(user.id)))
        .set('Content-Type', `application/x-www-form-urlencoded; charset=${charset}`)
        .send('List-Unsubscribe=One-Click');
      expect({ charset, status: res.status, body: res.body }).toEqual({
        charset,
        status: 200,
        body: { unsubscribed: true },
      });
      expect((await reload(user)).marketingConsentGiven).toBe(false);
    }
    // The body is still read under the form limit: too big is 413, whatever its charset.
    const kept = await createMember(api.prisma, 'charset-too-big', { consent: true });
    const big = await api.http
      .post(path(tokens.sign(kept.id)))
      .set('Content-Type', 'application/x-www-form-urlencoded; charset=us-ascii')
      .send(`List-Unsubscribe=One-Click&pad=${'x'.repeat(70 * 1024)}`);
    expect(big.status).toBe(413);
    expect(big.headers['content-type']).toMatch(/application\/problem\+json/);
    expect((await reload(kept)).marketingConsentGiven).toBe(true);
    // The double opt-in's POST ignores its form the same way: the token decides (here: a bad one).
    const confirm = await api.http
      .post('/api/v1/email/confirm?t=x')
      .set('Content-Type', 'application/x-www-form-urlencoded; charset=us-ascii')
      .send('a=b');
    expect({ status: confirm.status, code: confirm.body.code }).toEqual({
      status: 400,
      code: 'invalid_confirmation_token',
    });
    // A JSON route takes no form at all, whatever its charset.
    const other = await api.http
      .post('/api/v1/feedback')
      .set('Content-Type', 'application/x-www-form-urlencoded; charset=us-ascii')
      .send('message=hello');
    expect({ status: other.status, code: other.body.code }).toEqual({
      status: 415,
      code: 'unsupported_media_type',
    });
  });

  it('shows a confirmation page on GET whose button POSTs, and changes nothing', async () => {
    const user = await createMember(api.prisma, 'page', { consent: true });
    const token = tokens.sign(user.id);
    const res = await api.http.get(path(token));
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.text).toContain('<form method="post"');
    expect(res.text).toContain(`action="unsubscribe?t=${token}"`);
    expect(res.text).toContain('name="List-Unsubscribe" value="One-Click"');
    expect(res.text).not.toMatch(/<script/i);
    expect((await reload(user)).marketingConsentGiven).toBe(true);
    expect(await events(user)).toHaveLength(0);

    // The page's form posts with Accept: text/html and gets a page back, not JSON.
    const posted = await api.http
      .post(path(token))
      .set('Accept', 'text/html')
      .type('form')
      .send('List-Unsubscribe=One-Click');
    expect(posted.status).toBe(200);
    expect(posted.text).toContain('You are unsubscribed');
    expect((await reload(user)).marketingConsentGiven).toBe(false);
  });

  it('answers 400 problem+json to a missing, malformed or tampered token and changes nothing', async () => {
    const user = await createMember(api.prisma, 'tamper', { consent: true });
    const other = await createMember(api.prisma, 'tamper-other', { consent: true });
    const valid = tokens.sign(user.id);
    const [payload, mac] = valid.split('.');
    const otherPayload = tokens.sign(other.id).split('.')[0];
    const flipped = `${mac.slice(0, -1)}${mac.endsWith('A') ? 'B' : 'A'}`;
    const bad = [`${payload}.${flipped}`, `${otherPayload}.${mac}`, 'garbage', `${valid}.extra`, ''];
    for (const token of bad) {
      for (const method of ['get', 'post'] as const) {
        const res = await api.http[method](path(token))
          .type('form')
          .send(method === 'post' ? 'List-Unsubscribe=One-Click' : '');
        expect(res.status).toBe(400);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(res.body.code).toBe('invalid_unsubscribe_token');
      }
    }
    expect((await api.http.post('/api/v1/email/unsubscribe')).status).toBe(400);
    expect((await reload(user)).marketingConsentGiven).toBe(true);
    expect((await reload(other)).marketingConsentGiven).toBe(true);
    expect(await api.prisma.emailConsentEvent.count()).toBe(
      await api.prisma.emailConsentEvent.count({ where: { source: 'unsubscribe_link' } }),
    );
    expect(await events(user)).toHaveLength(0);
  });

  it('answers an authentic token whose payload is malformed like a tampered one: 400, nothing changes', async () => {
    const user = await createMember(api.prisma, 'bad-payload', { consent: true });
    const signed = (payload: unknown) => signedToken(payload, TEST_SECRETS.EMAIL_UNSUBSCRIBE_SECRET);
    const unsubscribe = [
      { u: 'not-a-uuid', p: 'marketing' },
      { u: 'a\u0000', p: 'marketing' },
      { u: '\ud800', p: 'marketing' },
      { u: 'x'.repeat(300), p: 'marketing' },
      { u: user.id, p: 'newsletter' },
      { u: user.id, p: 'marketing', e: 1e20 },
      { u: user.id, p: 'marketing', admin: true },
    ];
    const confirm = [
      { u: 'zzz', p: 'confirm', e: Date.now() + 86_400_000 },
      { u: 'a\u0000', p: 'confirm', e: Date.now() + 86_400_000 },
      { u: user.id, p: 'confirm', e: Date.now() + 86_400_000.5 },
    ];
    const cases = [
      ...unsubscribe.map((payload) => ({ route: 'unsubscribe', code: 'invalid_unsubscribe_token', payload })),
      ...confirm.map((payload) => ({ route: 'confirm', code: 'invalid_confirmation_token', payload })),
    ];
    for (const { route, code, payload } of cases) {
      for (const method of ['post', 'get'] as const) {
        const res = await api.http[method](`/api/v1/email/${route}`)
          .query({ t: signed(payload) })
          .set('Accept', 'application/json');
        expect({ route, method, payload, status: res.status, code: res.body.code }).toEqual({
          route,
          method,
          payload,
          status: 400,
          code,
        });
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      }
    }
    expect(await reload(user)).toMatchObject({
      marketingConsentGiven: true,
      marketingConsentSource: 'signup_form',
    });
    expect(await events(user)).toHaveLength(0);
  });

  it('exposes nothing else under the public e-mail namespace', async () => {
    expect((await api.http.get('/api/v1/email/anything')).status).toBe(404);
    expect((await api.http.put(path(tokens.sign('x'))).send({})).status).toBe(404);
  });
});
