import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { UnsubscribeTokens } from '../../src/modules/email/unsubscribe-tokens.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

describe('double opt-in (MARKETING_DOUBLE_OPT_IN=true)', () => {
  let env: TestEnv;
  let api: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create({ env: { MARKETING_DOUBLE_OPT_IN: 'true' } });
    api = await env.startApi();
    await env.startWorker();
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
});
