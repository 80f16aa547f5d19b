import { randomUUID } from 'node:crypto';
import { PrismaService } from '../../src/infra/prisma/prisma.service.js';
import { freePort, type RunningProcess, startCompiled, waitForHttp } from '../support/processes.js';
import type { ApiApp, TestEnv } from '../support/test-env.js';

/**
 * A Prisma client on the test database that does NOT go through the fault proxy: the test reads what
 * the service did (or did not) write while its own connections are cut.
 */
export function directDb(env: TestEnv): PrismaService {
  const prisma = new PrismaService(env.config);
  env.onClose(() => prisma.onModuleDestroy());
  return prisma;
}

export interface WorkerProcess extends RunningProcess {
  healthUrl: string;
}

/**
 * The compiled worker (dist/worker.js) as a real process, with the test env's variables plus `extra`
 * (e.g. a proxied DATABASE_URL). Killed at env.close() if still running.
 */
export async function startWorkerProcess(
  env: TestEnv,
  extra: Record<string, string> = {},
): Promise<WorkerProcess> {
  const port = await freePort();
  const worker = startCompiled('worker', {
    ...env.env,
    LOG_LEVEL: 'warn',
    WORKER_PORT: String(port),
    ...extra,
  });
  env.onClose(async () => {
    if (worker.child.exitCode === null && worker.child.signalCode === null) {
      worker.child.kill('SIGKILL');
      await worker.exited;
    }
  });
  const healthUrl = `http://127.0.0.1:${port}/health`;
  let booted = false;
  const died = worker.exited.then((code) => {
    if (!booted) throw new Error(`the worker exited (${code}) while booting:\n${worker.stderr()}`);
  });
  await Promise.race([waitForHttp(healthUrl, 20_000), died]);
  booted = true;
  return { ...worker, healthUrl };
}

/** Runs `fn` and returns its result with the elapsed milliseconds. */
export async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - started };
}

export interface RouteOutcome {
  route: string;
  status: number;
  code: string | undefined;
  ms: number;
}

/**
 * Calls every route of the OpenAPI document once, all at once (path parameters get a random UUID, bodies
 * are `{}`), and reports status, problem code and time. A safety net over the hand-written outage tests:
 * a route nobody thought of must not hang or answer 500 either.
 */
export async function sweepRoutes(
  api: ApiApp,
  authorization: string,
  timeoutMs = 10_000,
): Promise<RouteOutcome[]> {
  const doc = (await api.http.get('/docs/openapi.json')).body as {
    paths: Record<string, Record<string, unknown>>;
  };
  const calls: Promise<RouteOutcome>[] = [];
  for (const [template, operations] of Object.entries(doc.paths)) {
    if (template.startsWith('/api/v1/probe')) continue; // test-only routes (ProbeModule)
    const path = template.replace(/\{[^}]+\}/g, randomUUID());
    for (const method of Object.keys(operations)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      calls.push(
        timed(async () => {
          const req = api.http[method as 'get'](path).set('Authorization', authorization).timeout(timeoutMs);
          return method === 'get' || method === 'delete' ? req : req.send({});
        }).then(
          ({ value, ms }) => ({
            route: `${method.toUpperCase()} ${template}`,
            status: value.status,
            code: (value.body as { code?: string })?.code,
            ms: Math.round(ms),
          }),
          () => ({ route: `${method.toUpperCase()} ${template}`, status: 0, code: 'timeout', ms: timeoutMs }),
        ),
      );
    }
  }
  return Promise.all(calls);
}

/**
 * The outcomes whose error answer openapi.json does not document for its route: an error status the
 * operation does not list, or a code its `x-problem-codes` does not name. A documented JSON answer that
 * is no problem (the readiness report's 503) is its route's own.
 */
export async function undocumentedOutcomes(api: ApiApp, outcomes: RouteOutcome[]): Promise<string[]> {
  const doc = (await api.http.get('/docs/openapi.json')).body as {
    paths: Record<
      string,
      Record<string, { responses: Record<string, { content?: object; 'x-problem-codes'?: string[] }> }>
    >;
  };
  return outcomes
    .filter((o) => o.status >= 400)
    .filter((o) => {
      const [method, template] = o.route.split(' ');
      const response = doc.paths[template]?.[method.toLowerCase()]?.responses[String(o.status)];
      if (response?.content && 'application/json' in response.content) return false;
      return o.code === undefined || !(response?.['x-problem-codes'] ?? []).includes(o.code);
    })
    .map((o) => `${o.route} answered ${o.status} ${o.code}`);
}
