import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DeployedWorld } from '../support/deployed.js';
import { freePort, type RunningProcess, startCompiled, waitForHttp } from '../support/processes.js';
import { TestEnv } from '../support/test-env.js';

/** Svix (Clerk's sender) generates 24-byte `whsec_` secrets: a deployed API must boot with one (issue 13 item 3). */
describe('deployed boot with a Svix-generated identity webhook secret', () => {
  let env: TestEnv;
  let world: DeployedWorld;
  let deployed: Record<string, string>;
  const running: RunningProcess[] = [];
  const whsec = (bytes: number) => `whsec_${randomBytes(bytes).toString('base64')}`;

  beforeAll(async () => {
    env = await TestEnv.create();
    world = await DeployedWorld.start(env);
    deployed = world.vars;
  });

  afterAll(async () => {
    for (const p of running) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await world.close();
    await env.close();
  });

  const start = async (extra: Record<string, string>) => {
    const port = await freePort();
    const p = startCompiled('main', { ...deployed, PORT: String(port), ...extra });
    running.push(p);
    return { p, port };
  };

  it('starts with 24-byte current and previous secrets and becomes ready', async () => {
    const { p, port } = await start({
      IDENTITY_WEBHOOK_SECRET: whsec(24),
      IDENTITY_WEBHOOK_SECRET_PREVIOUS: whsec(24),
    });
    await waitForHttp(`http://127.0.0.1:${port}/health`);
    expect((await fetch(`http://127.0.0.1:${port}/health/ready`)).status).toBe(200);
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  });

  it('refuses a 16-byte secret with one line naming the variable', async () => {
    const { p } = await start({ IDENTITY_WEBHOOK_SECRET: whsec(16) });
    expect(await p.exited).toBe(1);
    expect(p.stderr().trim().split('\n')).toEqual([
      'boot refused [secrets]: IDENTITY_WEBHOOK_SECRET is unset or shorter than 24 bytes',
    ]);
  });
});
