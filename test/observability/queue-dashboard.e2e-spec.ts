import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import request from 'supertest';
import { loadConfig } from '../../src/config/env.js';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import { JOBS } from '../../src/infra/queue/queues.js';
import { SESSION_COOKIE } from '../../src/modules/admin/queue-dashboard/queue-dashboard.mount.js';
import { freePort, ROOT } from '../support/processes.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

/** Debian's `chromium` package (.ci/run installs it when missing), driven by playwright-core. */
const CHROMIUM = '/usr/bin/chromium';
const OUTPUT = process.env.TEST_OUTPUT_DIR ?? join(ROOT, 'test-output');
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const ADMIN = 'admin@example.com';

describe('Queue dashboard (@bull-board at /admin/queues)', () => {
  let env: TestEnv;
  let api: ApiApp;
  let origin: string;
  let browser: BrowserContext;
  let profile: string;
  let delayedJobId: string;

  const link = async (auth: string) =>
    api.http.post('/api/v1/admin/queue-dashboard/session').set('Authorization', auth);
  const adminAuth = () => api.bearer('user_admin', ADMIN);

  beforeAll(async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(
        `${CHROMIUM} is missing: apt-get install chromium (Debian), or run .ci/run, which does`,
      );
    env = await TestEnv.create();
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    api = await env.startApi({ config: env.configWith({ PUBLIC_BASE_URL: origin }) });
    await api.app.listen(port, '127.0.0.1');
    const queues = api.app.get(QueueService);
    await queues.add(JOBS.sendEmail, { userId: 'none', templateKey: 'welcome', idempotencyKey: 'dash-1' });
    delayedJobId = (await queues.add(
      JOBS.sendEmail,
      { userId: 'none', templateKey: 'welcome', idempotencyKey: 'dash-2' },
      { delay: 3_600_000, jobId: 'dashboard-delayed' },
    ))!;
    profile = mkdtempSync(join(tmpdir(), 'chromium-profile-'));
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: FLAGS,
    });
  });

  afterAll(async () => {
    await browser?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    await env?.close();
  });

  it('refuses a browser without a session, then signs an admin in through a one-time link and shows the queues', async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    let signedInYet = false;
    page.on('console', (msg) => {
      // The UI links Google Fonts; the CSP (default-src 'self') keeps the page from calling out: system fonts.
      // Failed loads are reported below with their URL.
      const text = msg.text();
      if (
        signedInYet &&
        msg.type() === 'error' &&
        !/fonts\.googleapis\.com|^Failed to load resource/.test(text)
      )
        problems.push(text);
    });
    page.on('response', (r) => {
      if (signedInYet && r.status() >= 400) problems.push(`${r.status()} ${r.url()}`);
    });
    page.on('pageerror', (err) => problems.push(err.message));

    const refused = await page.goto(`${origin}/admin/queues`);
    expect(refused?.status()).toBe(401);
    expect(refused?.headers()['content-type']).toContain('application/problem+json');
    expect(await refused?.json()).toMatchObject({ code: 'dashboard_session_required' });

    const res = await link(await adminAuth());
    expect(res.status).toBe(201);
    const url = new URL(res.body.url as string);
    expect(url.origin + url.pathname).toBe(`${origin}/admin/queues/login`);
    expect(new Date(res.body.expires_at as string).getTime()).toBeGreaterThan(Date.now());

    signedInYet = true;
    const signedIn = await page.goto(url.toString());
    expect(signedIn?.status()).toBe(200);
    expect(new URL(page.url()).pathname).toBe('/admin/queues/');
    const cookie = (await browser.cookies(`${origin}/admin/queues/`)).find((c) => c.name === SESSION_COOKIE);
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/admin/queues' });

    for (const queue of ['email', 'webhooks', 'broadcasts']) {
      await page.getByText(queue, { exact: true }).first().waitFor({ timeout: 15_000 });
    }
    await page.goto(`${origin}/admin/queues/queue/email?status=delayed`);
    await page.getByText(delayedJobId).first().waitFor({ timeout: 15_000 });
    mkdirSync(OUTPUT, { recursive: true });
    const shot = join(OUTPUT, 'queue-dashboard.png');
    await page.screenshot({ path: shot, fullPage: true });
    expect(statSync(shot).size).toBeGreaterThan(10_000);
    expect(problems).toEqual([]);

    // The link was used: it opens nothing a second time.
    const again = await (await browser.newPage()).goto(url.toString());
    expect(again?.status()).toBe(401);
    expect(await again?.json()).toMatchObject({ code: 'invalid_ticket' });
    await page.close();
  });

  it('lets the page promote a job (audited) and refuses changes outside the allowed ones or from another site', async () => {
    const page = await browser.newPage();
    await page.goto(`${origin}/admin/queues/`);
    const put = (path: string) =>
      page.evaluate(async (p) => {
        const r = await fetch(p, { method: 'PUT' });
        return { status: r.status, body: await r.text() };
      }, path);

    const promoted = await put(`/admin/queues/api/queues/email/${delayedJobId}/promote`);
    expect(promoted).toMatchObject({ status: expect.any(Number) });
    expect(promoted.status).toBeLessThan(300);
    const job = await api.app.get(QueueService).queue('email').getJob(delayedJobId);
    expect(await job?.getState()).toBe('waiting');
    // Audited once the response has finished (only a change that succeeded is recorded), so it may land
    // just after the page's fetch resolves.
    const audit = await waitFor(() =>
      api.prisma.auditLog.findFirst({ where: { action: 'admin.queue_action' } }),
    );
    expect(audit).toMatchObject({ resourceType: 'queue', resourceId: 'email' });
    expect(audit?.details).toMatchObject({ action: 'promote_job', job_id: delayedJobId });

    const emptied = await put('/admin/queues/api/queues/email/empty');
    expect(emptied.status).toBe(403);
    expect(JSON.parse(emptied.body)).toMatchObject({ code: 'queue_action_not_allowed' });
    expect(await api.app.get(QueueService).queue('email').getWaitingCount()).toBeGreaterThan(0);

    const [session] = (await browser.cookies(`${origin}/admin/queues/`)).filter(
      (c) => c.name === SESSION_COOKIE,
    );
    const crossSite = await request(origin)
      .put('/admin/queues/api/queues/email/pause')
      .set('Cookie', `${SESSION_COOKIE}=${session.value}`)
      .set('Sec-Fetch-Site', 'cross-site')
      .set('Origin', 'https://evil.example');
    expect(crossSite.status).toBe(403);
    expect(crossSite.body).toMatchObject({ code: 'cross_site_request' });
    expect(await api.app.get(QueueService).queue('email').isPaused()).toBe(false);
    await page.close();
  });

  it('gives links to administrators only, and ends a session whose user lost the rights', async () => {
    const user = await api.bearer('user_plain', 'plain@example.com');
    expect((await link(user)).status).toBe(403);
    expect((await link('Bearer nonsense')).status).toBe(401);

    const res = await link(await adminAuth());
    const signIn = await request(origin).get(
      new URL(res.body.url as string).pathname + new URL(res.body.url as string).search,
    );
    expect(signIn.status).toBe(303);
    const cookie = String(signIn.headers['set-cookie']).split(';')[0];
    expect((await request(origin).get('/admin/queues/api/queues').set('Cookie', cookie)).status).toBe(200);

    // Same database and Redis, an allowlist without the admin: the next request is refused and the session ends.
    const demoted = await env.startApi({
      config: env.configWith({ PUBLIC_BASE_URL: origin, ADMIN_EMAILS: '' }),
    });
    const refused = await demoted.http.get('/admin/queues/api/queues').set('Cookie', cookie);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'admin_required' });
    expect((await request(origin).get('/admin/queues/api/queues').set('Cookie', cookie)).status).toBe(401);
  });

  /** A session cookie for the admin, from a one-time link opened without a browser. */
  const signIn = async (): Promise<string> => {
    const res = await link(await adminAuth());
    const url = new URL(res.body.url as string);
    const signedIn = await request(origin).get(url.pathname + url.search);
    expect(signedIn.status).toBe(303);
    return String(signedIn.headers['set-cookie']).split(';')[0];
  };

  it('refuses a path or query bull-board would mishandle with a 400 problem+json that quotes none of it', async () => {
    const cookie = await signIn();
    // NUL: bull-board's validation message splits on it (500 "Unterminated string in JSON"); a `%` left after
    // the transport decoding: bull-board decodes queue names a second time (500 "URI malformed"); escapes
    // that are not UTF-8 in the path: Express's param decoding (400 "INTERNAL_SERVER_ERROR" quoting them).
    const refused: [string, string][] = [
      ['GET', '/admin/queues/api/queues?status=%00'],
      ['GET', '/admin/queues/api/queues?status=latest%00'],
      ['GET', '/admin/queues/api/queues?activeQueue=email%25'],
      ['GET', '/admin/queues/api/queues?activeQueue=email%2500'],
      ['GET', '/admin/queues/api/queues?activeQueue=email%'],
      ['GET', '/admin/queues/api/queues?activeQueue=email%0a'],
      ['GET', '/admin/queues/api/job-schedulers?queueName=%25'],
      ['GET', '/admin/queues/api/queues/email/%ff'],
      ['GET', '/admin/queues/api/queues/email/%'],
      ['GET', '/admin/queues/api/queues/email%0d%0a/metrics'],
      ['GET', '/admin/queues/api/queues/email/x%00/logs'],
      ['GET', '/admin/queues/queue/%ff'],
      ['PUT', '/admin/queues/api/queues/email/%ff/retry'],
      ['PUT', '/admin/queues/api/queues/email%00/pause'],
    ];
    for (const [method, path] of refused) {
      const agent = request(origin);
      const res = await (method === 'PUT' ? agent.put(path) : agent.get(path))
        .set('Cookie', cookie)
        .set('Sec-Fetch-Site', 'same-origin');
      expect({ method, path, status: res.status, type: res.headers['content-type'] }).toEqual({
        method,
        path,
        status: 400,
        type: expect.stringContaining('application/problem+json'),
      });
      expect(JSON.parse(res.text)).toMatchObject({ status: 400, code: 'validation_failed' });
      expect(res.text).not.toMatch(/%ff|%25|%00|email%|INTERNAL_SERVER_ERROR/i);
    }
    expect(await api.app.get(QueueService).queue('email').isPaused()).toBe(false);
    // Signed out, the same request is a 401 first: nothing is said about input to a stranger.
    const stranger = await request(origin).get('/admin/queues/api/queues?status=%00');
    expect(stranger.status).toBe(401);
    // What the page itself sends still works.
    const ok = await request(origin)
      .get('/admin/queues/api/queues?activeQueue=email&status=latest&page=1&jobsPerPage=10')
      .set('Cookie', cookie);
    expect(ok.status).toBe(200);
  });

  it("answers bull-board's own errors as problem+json, keeping the key its page shows", async () => {
    const cookie = await signIn();
    const get = (path: string) => request(origin).get(path).set('Cookie', cookie);
    const put = (path: string) =>
      request(origin).put(path).set('Cookie', cookie).set('Sec-Fetch-Site', 'same-origin');
    const cases: [Promise<request.Response>, number, string, string][] = [
      [get('/admin/queues/api/queues/email/no-such-job'), 404, 'job_not_found', 'ERRORS.JOB_NOT_FOUND'],
      [
        get('/admin/queues/api/queues/no-such-queue/metrics'),
        404,
        'queue_not_found',
        'ERRORS.QUEUE_NOT_FOUND',
      ],
      [put('/admin/queues/api/queues/email/no-such-job/retry'), 404, 'job_not_found', 'ERRORS.JOB_NOT_FOUND'],
      [get('/admin/queues/api/queues?status=zzqq'), 400, 'invalid_query_param', 'ERRORS.INVALID_QUERY_PARAM'],
      [
        put('/admin/queues/api/queues/email/retry/zzqq'),
        400,
        'status_not_retriable',
        'ERRORS.STATUS_NOT_RETRIABLE',
      ],
    ];
    for (const [pending, status, code, key] of cases) {
      const res = await pending;
      expect({ status: res.status, type: res.headers['content-type'] }).toEqual({
        status,
        type: expect.stringContaining('application/problem+json'),
      });
      const body = JSON.parse(res.text) as Record<string, unknown>;
      expect(body).toMatchObject({ type: `urn:problem:${code}`, status, code, error: { key } });
      expect(typeof body.detail).toBe('string');
      expect(body.request_id).toBe(res.headers['x-request-id']);
      // Nothing of the request comes back (bull-board put the refused status in its options).
      expect(res.text).not.toContain('zzqq');
      expect(res.text).not.toContain('no-such');
    }
    // The field a validation error names is the dashboard's own, not the caller's text.
    const invalid = await get('/admin/queues/api/queues?status=zzqq');
    expect(invalid.body).toMatchObject({ error: { options: { field: 'status' } } });

    expect(invalid.body.detail).toContain('"status"');
    // The page still reads them: its toast shows bull-board's own text for the key.
    const [name, value] = cookie.split('=');
    await browser.addCookies([
      { name, value, url: `${origin}/admin/queues`, httpOnly: true, sameSite: 'Lax' },
    ]);
    const page = await browser.newPage();
    await page.goto(`${origin}/admin/queues/queue/email/no-such-job`);
    await page
      .locator('[data-type="error"]', { hasText: 'Job not found' })
      .first()
      .waitFor({ timeout: 15_000 });
    await page.close();
    // The audit trail records changes that succeeded only.
    expect(
      await api.prisma.auditLog.count({
        where: { action: 'admin.queue_action', details: { path: ['action'], equals: 'retry_job' } },
      }),
    ).toBe(0);
  });

  it('is off in production unless QUEUE_DASHBOARD=true, and off anywhere with QUEUE_DASHBOARD=false', async () => {
    expect(loadConfig({ APP_ENV: 'production' }).queueDashboard).toBe(false);
    expect(loadConfig({ APP_ENV: 'production', QUEUE_DASHBOARD: 'true' }).queueDashboard).toBe(true);
    expect(loadConfig({ APP_ENV: 'development' }).queueDashboard).toBe(true);
    const off = await env.startApi({ config: env.configWith({ QUEUE_DASHBOARD: 'false' }) });
    expect((await off.http.get('/admin/queues/')).status).toBe(404);
    const res = await off.http
      .post('/api/v1/admin/queue-dashboard/session')
      .set('Authorization', await adminAuth());
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ code: 'queue_dashboard_disabled' });
  });
});
