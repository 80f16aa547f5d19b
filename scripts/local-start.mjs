// `npm start`: the API and the worker on one machine for development, with everything they need.
// `npm run start:dev` (`--watch`): the same, from src/ compiled by swc, restarted after every edit.
//
//   build      `npm run build` when dist/ is missing or older than its sources (LOCAL_BUILD=auto|always|never);
//              --watch: src/ compiled to .dev-build/ by swc instead, and recompiled on change (local/dev-build.mjs)
//   database   DATABASE_URL; else embedded PostgreSQL 16 under .data/postgres (LOCAL_DB=embedded, the default;
//              LOCAL_DB_PORT, default 54329). LOCAL_DB=server uses PostgreSQL on 127.0.0.1:5432 as user
//              postgres instead; LOCAL_DB=auto uses that server when it answers, else the embedded one
//   redis      REDIS_URL (default redis://127.0.0.1:6379); if nothing answers there, `redis-server` from PATH
//   identity   an RS256 key under .data/dev-identity/ and its JWKS on 127.0.0.1:LOCAL_IDENTITY_PORT (3002),
//              unless IDENTITY_JWKS_URL is set; `npm run dev:token -- <email>` mints tokens with that key
//   llm        unless LLM_BASE_URL is set, a development stand-in for the language model on
//              127.0.0.1:LOCAL_LLM_PORT (3003): labelled answers, so a completion succeeds and is charged
//   e-mail     EMAIL_PROVIDER=console (the default) prints every message in the worker's log
//   state      everything above lives in .data/ (LOCAL_DATA_DIR moves it, e.g. for a throwaway run)
//   seed       migrations, then the demo admin admin@example.com (also put in ADMIN_EMAILS unless set);
//              `npm run db:seed` adds demo data, `npm run db:reset` empties the local database
//
// Reads .env when present (variables already in the environment win). Ctrl-C stops everything it started,
// the API and the worker first. The parts live in scripts/local/ and scripts/lib/; this file re-exports
// what scripts/dev-token.mjs used to import from it.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dataDir, loadDotEnv, portSetting, setting } from './lib/env.mjs';
import { paint, say } from './lib/output.mjs';
import {
  exited,
  isStopping,
  lastResort,
  portFree,
  shutdown,
  spawned,
  started,
  stopProcess,
  supervise,
  waitForHttp,
} from './lib/processes.mjs';
import { deploy } from './migrate.mjs';
import { buildIfNeeded } from './local/build.mjs';
import { resolveDatabase, seedDemoAdmin } from './local/database.mjs';
import { buildAll, buildDir, watchSources } from './local/dev-build.mjs';
import { DEMO_ADMIN, DEV_ISSUER, startDevIdentity } from './local/identity.mjs';
import { startDevLlm } from './local/llm.mjs';
import { resolveRedis } from './local/redis.mjs';
import { startService } from './local/services.mjs';

/** The credit packs `npm start` offers unless BILLING_CREDIT_PACKS is set (price id:credits). */
const DEV_CREDIT_PACKS = 'pri_dev_pack_s:500,pri_dev_pack_l:3000';
const STANDBY = fileURLToPath(new URL('./local/standby.mjs', import.meta.url));

export { loadDotEnv } from './lib/env.mjs';
export { DEMO_ADMIN, DEV_ISSUER, devSubjectFor, readDevSigningKey } from './local/identity.mjs';

const watchMode = process.argv.includes('--watch');

async function main() {
  if (loadDotEnv()) say('loaded .env');
  await mkdir(dataDir(), { recursive: true });
  const apiPort = portSetting('PORT', 3000);
  const workerPort = portSetting('WORKER_PORT', 3001);
  const useDevIdentity = !setting('IDENTITY_JWKS_URL');
  const identityPort = portSetting('LOCAL_IDENTITY_PORT', 3002);
  const useDevLlm = !setting('LLM_BASE_URL');
  const llmPort = portSetting('LOCAL_LLM_PORT', 3003);
  const ports = [
    ['PORT', apiPort],
    ['WORKER_PORT', workerPort],
    ...(useDevIdentity ? [['LOCAL_IDENTITY_PORT', identityPort]] : []),
    ...(useDevLlm ? [['LOCAL_LLM_PORT', llmPort]] : []),
  ];
  for (const [name, port] of ports) {
    if (!(await portFree(port)))
      throw new Error(`port ${port} (${name}) is in use; stop what uses it or set ${name}`);
  }

  if (watchMode) {
    const startedAt = Date.now();
    const files = await buildAll();
    say(`compiled ${files} files to ${buildDir()} with swc in ${Date.now() - startedAt} ms (no type check)`);
  } else {
    await buildIfNeeded();
  }
  if (isStopping()) return;
  const databaseUrl = await resolveDatabase();
  if (isStopping()) return;
  await deploy({ databaseUrl, log: (message) => say(`migrations: ${message}`) });
  await seedDemoAdmin(databaseUrl);
  if (isStopping()) return;
  const redisUrl = await resolveRedis();
  if (isStopping()) return;

  const env = {
    ...process.env,
    APP_ENV: setting('APP_ENV', 'development'),
    PORT: String(apiPort),
    WORKER_PORT: String(workerPort),
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    ADMIN_EMAILS: setting('ADMIN_EMAILS', DEMO_ADMIN.email),
    // Two credit packs to try `npm run dev:billing -- <email> pri_dev_pack_s` with (BILLING_CREDIT_PACKS wins).
    BILLING_CREDIT_PACKS: setting('BILLING_CREDIT_PACKS', DEV_CREDIT_PACKS),
  };
  if (useDevIdentity) {
    env.IDENTITY_JWKS_URL = await startDevIdentity(identityPort);
    env.IDENTITY_ISSUER = setting('IDENTITY_ISSUER', DEV_ISSUER);
    if (env.IDENTITY_ISSUER !== DEV_ISSUER)
      say(`IDENTITY_ISSUER is set: development tokens (iss ${DEV_ISSUER}) will be refused`);
  } else {
    say(`identity: ${setting('IDENTITY_JWKS_URL')} (IDENTITY_JWKS_URL); development tokens will be refused`);
  }
  if (useDevLlm) {
    const llm = await startDevLlm({
      port: llmPort,
      log: (line) => process.stdout.write(`${paint('33', '[llm]')} ${line}\n`),
    });
    started.push({ name: 'development LLM stand-in', stop: llm.close });
    env.LLM_BASE_URL = llm.url;
    say(
      `llm: development stand-in on ${llm.url} (LLM_BASE_URL is unset): labelled canned answers, not a model`,
    );
  } else {
    say(`llm: ${setting('LLM_BASE_URL')} (LLM_BASE_URL)`);
  }
  if (isStopping()) return;

  const api = watchMode ? await startWatched(env) : startService('api', 'dist/main.js', env, '36');
  if (!watchMode) {
    const worker = startService('worker', 'dist/worker.js', env, '35');
    started.push({
      name: 'API and worker',
      stop: () => Promise.all([stopProcess(api, 'api'), stopProcess(worker, 'worker')]),
    });
    await Promise.all([spawned(api), spawned(worker)]);
    supervise(api, 'api', 'SIGTERM');
    supervise(worker, 'worker', 'SIGTERM');
  }

  const base = `http://localhost:${apiPort}`;
  if (!(await waitForHttp(`http://127.0.0.1:${apiPort}/health`, watchMode ? api.current : api, 120_000))) {
    if (!isStopping()) say(`the API does not answer on ${base}/health yet; see its log above`);
    return;
  }
  const rows = [
    ['API', `${base}/api/v1`],
    ['Docs', `${base}/docs`],
    ['Health', `${base}/health/ready`],
    ['Worker', `http://localhost:${workerPort}/health`],
    [
      'Token',
      useDevIdentity
        ? `npm run -s dev:token -- <email>   (admin: ${DEMO_ADMIN.email}; valid 1 h)`
        : 'from your identity provider (IDENTITY_JWKS_URL is set)',
    ],
    ['LLM', useDevLlm ? `development stand-in (set LLM_BASE_URL for a real model)` : setting('LLM_BASE_URL')],
    ['Billing', 'npm run dev:billing -- <email> PRO   (signed test events through the webhook path)'],
    ...(watchMode ? [['Watch', 'src/ changes restart the API and the worker (no type check)']] : []),
    ['Stop', 'Ctrl-C'],
  ];
  process.stdout.write(
    `\n${rows.map(([label, value]) => `  ${paint('1', label.padEnd(7))} ${value}`).join('\n')}\n\n`,
  );
}

/**
 * start:dev: the API and the worker from the swc build, restarted together after each recompilation.
 * A process that crashes is not fatal here: the next edit starts it again. Returns { current }, the
 * running API child (replaced on every restart).
 */
async function startWatched(env) {
  const entry = (name) => `${buildDir()}/${name}.js`;
  // Node >= 22.1 caches compiled modules there: most of a restart is loading node_modules again.
  env.NODE_COMPILE_CACHE ??= join(dataDir(), 'compile-cache');
  const running = { current: null, worker: null };
  const watchExit = (child, name) =>
    child.once('exit', (code, signal) => {
      if (!isStopping() && !child.restarting && !child.standby)
        say(`${name} exited (${signal ?? `code ${code}`}); waiting for a change to restart it`);
    });
  // One standby process per service, its dependencies already loaded (scripts/local/standby.mjs).
  const standbys = new Map();
  const prepare = (name, color) => {
    const child = startService(name, STANDBY, env, color, { ipc: true });
    child.standby = true;
    child.on('error', () => {});
    standbys.set(name, child);
  };
  const run = (name, color, file) => {
    let child = standbys.get(name);
    standbys.delete(name);
    if (!child || exited(child)) {
      child = startService(name, STANDBY, env, color, { ipc: true });
      child.on('error', () => {});
    }
    child.standby = false;
    child.send({ entry: entry(file) });
    watchExit(child, name);
    return child;
  };
  // The API first, the worker once the API answers: on a small machine two Nest boots at once take
  // about as long as both one after the other, and the API is what the edit is checked through. Then
  // the next standbys, while nothing is waiting for them.
  const launch = async () => {
    running.current = run('api', '36', 'main');
    const ok = await waitForHttp(`http://127.0.0.1:${env.PORT}/health`, running.current, 60_000);
    if (isStopping()) return ok;
    running.worker = run('worker', '35', 'worker');
    prepare('api', '36');
    prepare('worker', '35');
    return ok;
  };
  const stopBoth = () =>
    Promise.all(
      [
        [running.current, 'api'],
        [running.worker, 'worker'],
      ].map(([child, name]) => {
        if (!child) return undefined;
        child.restarting = true;
        return stopProcess(child, name);
      }),
    );
  let restarting = Promise.resolve();
  const stopWatching = watchSources({
    onBuilt: (files, changedAt) => {
      restarting = restarting.then(async () => {
        if (isStopping()) return;
        say(
          `changed: ${files.slice(0, 3).join(', ')}${files.length > 3 ? ` and ${files.length - 3} more` : ''}; restarting`,
        );
        await stopBoth();
        if (isStopping()) return;
        const stoppedAt = Date.now();
        const ok = await launch();
        if (ok)
          say(
            `restarted: the API answers again ${Date.now() - changedAt} ms after the change ` +
              `(compiling and stopping ${stoppedAt - changedAt} ms, starting ${Date.now() - stoppedAt} ms)`,
          );
      });
    },
    onError: (error) => say(`compile failed, still running the previous build: ${error.message}`),
  });
  started.push({
    name: 'API and worker (watch)',
    stop: async () => {
      stopWatching();
      await restarting.catch(() => {});
      await stopBoth();
      await Promise.all(
        [...standbys.entries()].map(([name, child]) => stopProcess(child, `${name} standby`)),
      );
    },
  });
  await launch();
  return running;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  // npm forwards the terminal's Ctrl-C as well, so the same signal can arrive twice: stop once.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => {
      if (!isStopping()) void shutdown(0, `${signal}: stopping`);
    });
  }
  // `npm start` exits on SIGTERM without passing it on, which would leave us running: follow our parent.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent && !isStopping()) void shutdown(0, 'the parent process exited: stopping');
  }, 1000).unref();
  process.on('exit', () => {
    for (const { child, signal } of lastResort) if (!exited(child)) child.kill(signal);
  });
  // Writing to a closed pipe (`npm start | head`) must not crash the launcher and orphan its children.
  process.stdout.on('error', () => {});
  main().catch((error) => {
    if (isStopping()) return;
    void shutdown(1, `failed: ${error.message}`);
  });
}
