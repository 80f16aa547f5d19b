import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { HttpClient } from '../../src/infra/http/http-client.js';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import { JOBS, tickJobId } from '../../src/infra/queue/queues.js';
import {
  DisposableDomainsService,
  shippedBlocklist,
} from '../../src/modules/email/disposable/disposable-domains.service.js';
import { DisposableDomainsRepository } from '../../src/modules/email/disposable/disposable-domains.repository.js';
import { JobScheduler } from '../../src/infra/queue/job-scheduler.js';
import { FakeBlocklistServer } from '../fakes/blocklist-server.js';
import { identityUserEvent, signIdentityEvent } from '../support/identity-webhook.js';
import { ProbeModule } from '../support/probe.module.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

const generated = (count: number, suffix = 'throwaway.test') =>
  Array.from({ length: count }, (_, i) => `d${i}.${suffix}`);

describe('disposable-address blocklist: shipped list, daily refresh from a fixed URL, signup flag', () => {
  let lists: FakeBlocklistServer;
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;
  let blocklist: DisposableDomainsService;

  beforeAll(async () => {
    lists = await FakeBlocklistServer.start();
    env = await TestEnv.create({ env: { DISPOSABLE_DOMAINS_URL: lists.url } });
    env.onClose(() => lists.close());
    api = await env.startApi({ modules: [ProbeModule] });
    worker = await env.startWorker();
    worker.get(HttpClient).backoffBaseMs = 5;
    blocklist = worker.get(DisposableDomainsService);
  });
  afterAll(() => env.close());

  const count = () => api.prisma.disposableDomain.count();

  it('starts from the list shipped with the project and flags disposable signups (subdomains too)', async () => {
    const shipped = shippedBlocklist();
    expect(shipped.source).toMatch(/^package:disposable-email-domains-js@/);
    expect(await blocklist.isDisposable('someone@mailinator.com')).toBe(true);
    expect(await count()).toBe(shipped.domains.length);
    expect(await blocklist.isDisposable('someone@example.com')).toBe(false);

    for (const [sub, email] of [
      ['user_throwaway', 'Someone@Mailinator.com'],
      ['user_subdomain', 'x@inbox.mailinator.com'],
      ['user_real', 'real@example.com'],
    ]) {
      await api.http.get('/api/v1/probe/whoami').set('Authorization', await api.bearer(sub, email));
    }
    const flagged = await waitFor(async () => {
      const users = await api.prisma.user.findMany({
        where: { identityUserId: { in: ['user_throwaway', 'user_subdomain', 'user_real'] } },
      });
      const welcomed = await api.prisma.emailMessage.count({
        where: { userId: { in: users.map((u) => u.id) }, templateKey: 'welcome' },
      });
      return users.length === 3 && welcomed === 3 ? users : null;
    });
    expect(Object.fromEntries(flagged.map((u) => [u.identityUserId, u.emailDisposable]))).toEqual({
      user_throwaway: true,
      user_subdomain: true,
      user_real: false,
    });
  });

  it('replaces the list from the configured URL (plain text with comments, or a JSON array)', async () => {
    const domains = generated(6000);
    lists.serve(`# disposable domains\n${domains.join('\n')}\nFRESH-disposable.test  # trailing comment\n\n`);
    const outcome = await blocklist.refresh();
    expect(outcome).toMatchObject({
      status: 'updated',
      count: 6001,
      source: `url:${new URL(lists.url).host}`,
    });
    expect(await count()).toBe(6001);
    expect(await blocklist.isDisposable('a@fresh-disposable.test')).toBe(true);
    expect(await blocklist.isDisposable('a@mailinator.com')).toBe(false);

    lists.serve([...generated(5000), 'mailinator.com']);
    expect(await blocklist.refresh()).toMatchObject({ status: 'updated', count: 5001 });
    expect(await blocklist.isDisposable('a@mailinator.com')).toBe(true);
    expect(await blocklist.isDisposable('a@fresh-disposable.test')).toBe(false);
  });

  it('keeps the old list when the download fails or the answer is not a plausible blocklist', async () => {
    const before = await count();
    const failures: [string, string | unknown[], number][] = [
      ['server error', 'oops', 500],
      [
        'html page',
        `<!doctype html>\n<html>\n<body>\n<p>Maintenance</p>\n</body>\n</html>\n${generated(200).join('\n')}`,
        200,
      ],
      ['json object', JSON.stringify({ domains: generated(5000) }), 200],
      ['shrunk by more than half', generated(1000, 'small.test').join('\n'), 200],
      ['too few', generated(20).join('\n'), 200],
      [
        'malformed lines',
        [...generated(5000), ...Array.from({ length: 100 }, (_, i) => `not a domain ${i}`)].join('\n'),
        200,
      ],
    ];
    for (const [label, body, status] of failures) {
      lists.serve(body, status);
      if (label === 'json object') lists.contentType = 'application/json';
      await expect(blocklist.refresh()).rejects.toMatchObject({ name: 'BlocklistError' });
      expect([label, await count()]).toEqual([label, before]);
    }
    expect(await blocklist.isDisposable('a@mailinator.com')).toBe(true);
  });

  it('runs as the daily job: the scheduler enqueues one job per day, the worker records the run', async () => {
    lists.serve(generated(5000, 'daily.test').join('\n'));
    const scheduler = worker.get(JobScheduler);
    await scheduler.enqueue('refreshBlocklist', new Date());
    await scheduler.enqueue('refreshBlocklist', new Date());
    const jobId = tickJobId(JOBS.refreshBlocklist, new Date(), 'day');
    const queue = worker.get(QueueService).queue(JOBS.refreshBlocklist.queue);
    const run = await waitFor(() =>
      api.prisma.jobRun
        .findUnique({ where: { name: JOBS.refreshBlocklist.name } })
        .then((r) => (r?.lastStatus === 'ok' ? r : null)),
    );
    expect(run.runs).toBe(1);
    expect(await queue.getJob(jobId)).toBeDefined();
    expect(await blocklist.isDisposable('x@d1.daily.test')).toBe(true);

    lists.serve('gone', 503);
    await queue.add(JOBS.refreshBlocklist.name, {}, { jobId: 'refresh-failing', attempts: 1 });
    const failed = await waitFor(() =>
      api.prisma.jobRun
        .findUnique({ where: { name: JOBS.refreshBlocklist.name } })
        .then((r) => (r?.lastStatus === 'failed' ? r : null)),
    );
    expect(failed.lastError).toMatch(/503/);
    expect(await blocklist.isDisposable('x@d1.daily.test')).toBe(true);
  });

  it('without a configured URL keeps the active list and makes no request', async () => {
    const unconfigured = await env.startApi({ config: env.configWith({ DISPOSABLE_DOMAINS_URL: '' }) });
    const requests = lists.requests;
    const before = await count();
    const outcome = await unconfigured.app.get(DisposableDomainsService).refresh();
    expect(outcome).toMatchObject({ status: 'not_configured', count: before });
    expect(lists.requests).toBe(requests);
    expect(await count()).toBe(before);
  });

  it('judges a changed address afresh when the identity provider reports a new e-mail', async () => {
    const post = async (email: string) => {
      const delivery = signIdentityEvent(identityUserEvent('user.updated', 'user_switcher', email));
      const res = await api.http.post('/webhooks/identity').set(delivery.headers).send(delivery.body);
      expect(res.status).toBe(200);
    };
    const flag = async () =>
      (await api.prisma.user.findUnique({ where: { identityUserId: 'user_switcher' } }))?.emailDisposable;
    await post('first@example.com');
    await waitFor(async () => (await flag()) === false);
    // Whatever list the earlier refreshes left active.
    const { domain } = await api.prisma.disposableDomain.findFirstOrThrow();
    await post(`later@${domain}`);
    await waitFor(async () => (await flag()) === true);
    await post('real@example.org');
    await waitFor(async () => (await flag()) === false);
  });

  it('takes the first download from a new source whatever the size of the list it replaces', async () => {
    // The shipped package is active again (as on a deployment's first day); the upstream list is smaller.
    const shipped = shippedBlocklist();
    await api.prisma.$transaction((tx) =>
      worker.get(DisposableDomainsRepository).replaceAll(tx, shipped.domains, shipped.source),
    );
    const smaller = generated(Math.floor(shipped.domains.length / 3), 'upstream.test');
    lists.serve(smaller.join('\n'));
    expect(await blocklist.refresh()).toMatchObject({ status: 'updated', count: smaller.length });
    expect(await count()).toBe(smaller.length);
    // From then on the same source may not shrink by more than half in one step.
    lists.serve(generated(Math.floor(smaller.length / 3), 'truncated.test').join('\n'));
    await expect(blocklist.refresh()).rejects.toMatchObject({ name: 'BlocklistError' });
    expect(await count()).toBe(smaller.length);
  });
});
