import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import type { User } from '../../src/generated/prisma/client.js';
import { EmailService } from '../../src/modules/email/email.service.js';
import { UnsubscribeTokens } from '../../src/modules/email/unsubscribe-tokens.js';
import { deliverEmailEvent, resendEvent, signEmailEvent } from '../support/email-webhook.js';
import { type ApiApp, TEST_SECRETS, TestEnv } from '../support/test-env.js';
import { signedToken } from '../support/tokens.js';
import { waitFor } from '../support/wait.js';

const WEEK_MS = 7 * 86_400_000;

describe('double opt-in (MARKETING_DOUBLE_OPT_IN=true)', () => {
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;

  beforeAll(async () => {
    env = await TestEnv.create({ env: { MARKETING_DOUBLE_OPT_IN: 'true' } });
    api = await env.startApi();
    worker = await env.startWorker();
  });
  afterAll(() => env.close());

  it('consent through PATCH /me sends a signed link; consent is given only when the link is POSTed', async () => {
    const auth = await api.bearer('user_doi', 'doi@example.com');
    const patched = await api.http
      .patch('/api/v1/me')
      .set('Authorization', auth)
      .send({ marketing_consent_given: true, marketing_consent_source: 'signup_form' });
    expect(patched.status).toBe(200);
    expect(patched.body.marketing_consent_given).toBe(false);
    const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_doi' } });

    // The confirm_subscription e-mail (console provider: the body is kept) carries the link.
    const mail = await waitFor(
      () =>
        api.prisma.emailMessage.findFirst({
          where: { userId: user.id, templateKey: 'confirm_subscription', status: 'sent' },
        }),
      10_000,
    );
    const link = /https:\/\/app\.example\.test\/api\/v1\/email\/confirm\?t=([A-Za-z0-9_.-]+)/.exec(
      mail.text!,
    );
    expect(link).not.toBeNull();
    const token = link![1];

    // GET only shows a page whose form POSTs; nothing changes (link scanners).
    const page = await api.http.get('/api/v1/email/confirm').query({ t: token });
    expect(page.status).toBe(200);
    expect(page.text).toContain('<form method="post" action="confirm?t=');
    expect((await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).marketingConsentGiven).toBe(
      false,
    );

    // A forged, tampered or wrong-purpose link is 400 and changes nothing.
    const tokens = api.app.get(UnsubscribeTokens);
    const forged = [
      `${token.split('.')[0]}.AAAA`,
      tokens.sign(user.id), // an unsubscribe token is not a confirmation
      tokens.sign(user.id, 'confirm', new Date(Date.now() - 1000)), // expired
      'nonsense',
    ];
    for (const t of forged) {
      const res = await api.http.post('/api/v1/email/confirm').query({ t }).set('Accept', 'application/json');
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'invalid_confirmation_token' });
    }
    expect((await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).marketingConsentGiven).toBe(
      false,
    );

    // The POST gives consent, source double_opt_in, with a history row and an audit entry; twice is once.
    for (let i = 0; i < 2; i++) {
      const res = await api.http
        .post('/api/v1/email/confirm')
        .query({ t: token })
        .set('Accept', 'application/json');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ subscribed: true });
    }
    const after = await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } });
    expect(after).toMatchObject({ marketingConsentGiven: true, marketingConsentSource: 'double_opt_in' });
    const history = await api.prisma.emailConsentEvent.findMany({ where: { userId: user.id } });
    expect(history).toEqual([expect.objectContaining({ given: true, source: 'double_opt_in' })]);
    const audits = await api.prisma.auditLog.findMany({
      where: { action: 'email.subscribed', userId: 'user_doi' },
    });
    expect(audits).toHaveLength(1);
    expect(audits[0].details).toMatchObject({ source: 'double_opt_in', consent_given: true });

    // Withdrawing stays immediate.
    const withdrawn = await api.http
      .patch('/api/v1/me')
      .set('Authorization', auth)
      .send({ marketing_consent_given: false });
    expect(withdrawn.body.marketing_consent_given).toBe(false);
  });

  /** A signed-in user (created by the first request, as in production) and their bearer token. */
  async function signIn(identity: string): Promise<{ auth: string; user: User }> {
    const auth = await api.bearer(identity, `${identity.replace(/_/g, '-')}@example.com`);
    expect((await api.http.get('/api/v1/me').set('Authorization', auth)).status).toBe(200);
    return { auth, user: await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: identity } }) };
  }

  /** The user's confirm_subscription e-mails as sent so far, oldest first. */
  const confirmMails = (user: User) =>
    api.prisma.emailMessage.findMany({
      where: { userId: user.id, templateKey: 'confirm_subscription', status: 'sent' },
      orderBy: { createdAt: 'asc' },
    });

  /** Asks for marketing consent through PATCH /me and answers the token of the e-mail it sends (the nth). */
  async function askConsent(auth: string, user: User, nth: number): Promise<string> {
    const res = await api.http
      .patch('/api/v1/me')
      .set('Authorization', auth)
      .send({ marketing_consent_given: true });
    expect(res.status).toBe(200);
    expect(res.body.marketing_consent_given).toBe(false);
    const mails = await waitFor(async () => {
      const sent = await confirmMails(user);
      return sent.length >= nth ? sent : null;
    }, 10_000);
    expect(mails).toHaveLength(nth);
    const link = /\/api\/v1\/email\/confirm\?t=([A-Za-z0-9_.-]+)/.exec(mails[nth - 1].text!);
    return link![1];
  }

  const confirm = (t: string) =>
    api.http.post('/api/v1/email/confirm').query({ t }).set('Accept', 'application/json');
  const reload = (user: User) => api.prisma.user.findUniqueOrThrow({ where: { id: user.id } });
  /** What a link could have written: consent history, audit entries and e-mails of the user. */
  const records = async (user: User) => ({
    consent: await api.prisma.emailConsentEvent.count({ where: { userId: user.id } }),
    audit: await api.prisma.auditLog.count({ where: { userId: user.identityUserId } }),
    mail: await api.prisma.emailMessage.count({ where: { userId: user.id } }),
  });
  /** A refusal's problem body without the per-request members. */
  const problem = (body: Record<string, unknown>) => {
    const { instance: _instance, request_id: _requestId, trace_id: _traceId, ...rest } = body;
    return rest;
  };

  /**
   * A link issued before the latest withdrawal answers exactly what an expired link answers, on GET and
   * POST, and writes nothing: the consent stays withdrawn by `source`.
   */
  async function expectStale(user: User, token: string, source: string): Promise<void> {
    const before = await records(user);
    const expired = await confirm(
      api.app.get(UnsubscribeTokens).sign(user.id, 'confirm', new Date(Date.now() - 1000)),
    );
    expect(expired.status).toBe(400);
    for (let i = 0; i < 2; i++) {
      const res = await confirm(token);
      expect({ status: res.status, body: problem(res.body) }).toEqual({
        status: 400,
        body: problem(expired.body),
      });
    }
    const page = await api.http.get('/api/v1/email/confirm').query({ t: token });
    const expiredPage = await api.http
      .get('/api/v1/email/confirm')
      .query({ t: api.app.get(UnsubscribeTokens).sign(user.id, 'confirm', new Date(Date.now() - 1000)) });
    expect({ status: page.status, body: problem(page.body) }).toEqual({
      status: 400,
      body: problem(expiredPage.body),
    });
    expect(await reload(user)).toMatchObject({
      marketingConsentGiven: false,
      marketingConsentSource: source,
    });
    expect(await records(user)).toEqual(before);
  }

  it('a link issued before the latest withdrawal grants nothing; a link asked for after it does (unsubscribe link, PATCH /me)', async () => {
    const tokens = api.app.get(UnsubscribeTokens);
    const withdrawals: [string, (auth: string, user: User) => Promise<void>][] = [
      [
        'unsubscribe_link',
        async (_auth, user) => {
          const res = await api.http
            .post('/api/v1/email/unsubscribe')
            .query({ t: tokens.sign(user.id) })
            .set('Accept', 'application/json');
          expect(res.body).toEqual({ unsubscribed: true });
        },
      ],
      [
        'account_settings',
        async (auth) => {
          const res = await api.http
            .patch('/api/v1/me')
            .set('Authorization', auth)
            .send({ marketing_consent_given: false });
          expect(res.body.marketing_consent_given).toBe(false);
        },
      ],
    ];
    for (const [source, withdraw] of withdrawals) {
      const { auth, user } = await signIn(`user_doi_replay_${source}`);
      const first = await askConsent(auth, user, 1);
      expect((await confirm(first)).status).toBe(200);
      expect((await reload(user)).marketingConsentGiven).toBe(true);

      await withdraw(auth, user);
      await expectStale(user, first, source);

      // The user asks again (the same UTC day): a new e-mail, whose link gives consent; the old one stays dead.
      const second = await askConsent(auth, user, 2);
      expect(second).not.toBe(first);
      const res = await confirm(second);
      expect({ source, status: res.status, body: res.body }).toEqual({
        source,
        status: 200,
        body: { subscribed: true },
      });
      expect(await reload(user)).toMatchObject({
        marketingConsentGiven: true,
        marketingConsentSource: 'double_opt_in',
      });
      const history = await api.prisma.emailConsentEvent.findMany({
        where: { userId: user.id },
        orderBy: { createdAt: 'asc' },
      });
      expect(history.map((e) => [e.given, e.source])).toEqual([
        [true, 'double_opt_in'],
        [false, source],
        [true, 'double_opt_in'],
      ]);
      // Consent given again: the old link has nothing to grant and answers as a used link (200).
      expect((await confirm(first)).status).toBe(200);
    }
  });

  it('a spam complaint voids the links issued before it', async () => {
    const { auth, user } = await signIn('user_doi_complaint');
    const token = await askConsent(auth, user, 1);
    expect((await confirm(token)).status).toBe(200);
    const [mail] = await confirmMails(user);
    const delivery = signEmailEvent(
      resendEvent('email-complained', { providerMessageId: mail.providerMessageId!, to: user.email }),
    );
    expect((await deliverEmailEvent(api, delivery)).outcome).toBe('processed');
    expect((await reload(user)).marketingConsentGiven).toBe(false);
    await expectStale(user, token, 'complaint');
  });

  it('links sent before tokens carried their issue time: issued = expiry - 7 days', async () => {
    const { auth, user } = await signIn('user_doi_legacy');
    // `{u, p, e}` as the e-mails sent so far carry it; before any withdrawal it verifies and grants.
    const legacy = (issuedAt: number) =>
      signedToken({ u: user.id, p: 'confirm', e: issuedAt + WEEK_MS }, TEST_SECRETS.EMAIL_UNSUBSCRIBE_SECRET);
    const early = legacy(Date.now() - 60_000);
    expect((await api.http.get('/api/v1/email/confirm').query({ t: early })).status).toBe(200);
    expect((await confirm(early)).status).toBe(200);
    expect((await reload(user)).marketingConsentGiven).toBe(true);

    const withdrawn = await api.http
      .patch('/api/v1/me')
      .set('Authorization', auth)
      .send({ marketing_consent_given: false });
    expect(withdrawn.status).toBe(200);
    const at = (await reload(user)).marketingConsentAt!.getTime();
    await expectStale(user, legacy(at - 1), 'account_settings');
    await expectStale(user, early, 'account_settings');

    // Issued at the withdrawal's instant or after it: not before it, so it gives consent.
    expect((await confirm(legacy(at))).body).toEqual({ subscribed: true });
    expect(await reload(user)).toMatchObject({
      marketingConsentGiven: true,
      marketingConsentSource: 'double_opt_in',
    });
  });

  it('a link is issued when the user asked for it: an e-mail sent after a withdrawal that followed the request grants nothing', async () => {
    const { auth, user } = await signIn('user_doi_late_send');
    expect((await confirm(await askConsent(auth, user, 1))).status).toBe(200);
    const asked = new Date();
    const withdrawn = await api.http
      .patch('/api/v1/me')
      .set('Authorization', auth)
      .send({ marketing_consent_given: false });
    expect(withdrawn.body.marketing_consent_given).toBe(false);

    // A confirmation asked for before the withdrawal whose job ran after it (a queue held up).
    const send = (key: string, requestedAt?: string) =>
      worker.get(EmailService).sendTemplate({
        userId: user.id,
        templateKey: 'confirm_subscription',
        idempotencyKey: `confirm-subscription-${user.id}-${key}`,
        ...(requestedAt ? { requestedAt } : {}),
      });
    const linkOf = async (outcome: Awaited<ReturnType<typeof send>>) => {
      expect(outcome.status).toBe('sent');
      return /\/api\/v1\/email\/confirm\?t=([A-Za-z0-9_.-]+)/.exec(outcome.message!.text!)![1];
    };
    await expectStale(user, await linkOf(await send('late', asked.toISOString())), 'account_settings');

    // A job enqueued before links carried the request time: issued when signed, as before.
    expect((await confirm(await linkOf(await send('legacy-job')))).body).toEqual({ subscribed: true });
    expect((await reload(user)).marketingConsentGiven).toBe(true);
  });

  it('a request after a withdrawal stamped by a clock ahead still gets a working link', async () => {
    const { auth, user } = await signIn('user_doi_skew');
    expect((await confirm(await askConsent(auth, user, 1))).status).toBe(200);
    const res = await api.http
      .patch('/api/v1/me')
      .set('Authorization', auth)
      .send({ marketing_consent_given: false });
    expect(res.body.marketing_consent_given).toBe(false);
    // As if another instance (or the provider, for a complaint) stamped it 2 s ahead of this one's clock.
    await api.prisma.user.update({
      where: { id: user.id },
      data: { marketingConsentAt: new Date(Date.now() + 2000) },
    });
    expect((await confirm(await askConsent(auth, user, 2))).body).toEqual({ subscribed: true });
  });

  it('an old unsubscribe link still withdraws a consent confirmed after it was sent', async () => {
    const tokens = api.app.get(UnsubscribeTokens);
    const { auth, user } = await signIn('user_doi_old_unsub');
    const unsubscribe = tokens.sign(user.id); // in every earlier e-mail; it never expires
    const token = await askConsent(auth, user, 1);
    expect((await confirm(token)).status).toBe(200);
    expect((await reload(user)).marketingConsentGiven).toBe(true);

    const res = await api.http
      .post('/api/v1/email/unsubscribe')
      .query({ t: unsubscribe })
      .type('form')
      .send('List-Unsubscribe=One-Click');
    expect(res.status).toBe(200);
    expect(await reload(user)).toMatchObject({
      marketingConsentGiven: false,
      marketingConsentSource: 'unsubscribe_link',
    });
  });
});
