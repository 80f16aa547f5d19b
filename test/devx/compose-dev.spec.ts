import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
// @ts-expect-error plain ESM script without type declarations
import { startDevMail } from '../../scripts/dev-mail.mjs';
import { ROOT } from '../support/processes.js';

// js-yaml: installed with @nestjs/swagger (a production dependency), which parses YAML with it too.
const yaml = createRequire(import.meta.url)('js-yaml') as { load: (text: string) => unknown };

interface Service {
  profiles?: string[];
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  depends_on?: Record<string, { condition: string; required?: boolean }>;
  healthcheck?: { test: string[] };
}
const load = (file: string) =>
  yaml.load(readFileSync(join(ROOT, file), 'utf8')) as { services: Record<string, Service> };

/**
 * Issue 20 item 7: `cp .env.example .env && docker compose --profile dev up` (compose.yaml), and Chroma
 * not a hard dependency of the API in docker/compose.yml. No Docker engine here: the files are checked as
 * data, and the mail catcher they run is exercised for real.
 */
describe('compose.yaml (development profile)', () => {
  const { services } = load('compose.yaml');

  it('puts every service in the dev profile and starts the service under start:dev against them', () => {
    for (const [name, service] of Object.entries(services))
      expect({ name, profiles: service.profiles }).toEqual({ name, profiles: ['dev'] });
    const app = services.app;
    expect(app.command!.join(' ')).toMatch(/npm ci .*&& exec npm run start:dev/);
    const db = new URL(app.environment!.DATABASE_URL);
    expect(services[db.hostname]).toBeDefined();
    expect(services[new URL(app.environment!.REDIS_URL).hostname]).toBeDefined();
    expect(app.environment!.APP_ENV).toBe('development');
    expect(Object.keys(app.depends_on!).sort()).toEqual([db.hostname, 'mail', 'redis-dev'].sort());
  });

  it('sends e-mail to the mail catcher through the provider API (EMAIL_PROVIDER=resend)', () => {
    const app = services.app.environment!;
    expect(app.EMAIL_PROVIDER).toBe('resend');
    expect(app.EMAIL_API_KEY).toBeTruthy();
    const mail = services.mail;
    expect(mail.command).toEqual(['node', 'scripts/dev-mail.mjs']);
    expect(existsSync(join(ROOT, 'scripts', 'dev-mail.mjs'))).toBe(true);
    expect(new URL(app.EMAIL_API_URL).port).toBe(mail.environment!.DEV_MAIL_PORT);
    expect(mail.ports).toContain(`${mail.environment!.DEV_MAIL_PORT}:${mail.environment!.DEV_MAIL_PORT}`);
  });

  it('is what README.md tells a new developer to run', () => {
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8')).toContain(
      'cp .env.example .env && docker compose --profile dev up',
    );
  });
});

describe('docker/compose.yml', () => {
  it('does not make the API wait for Chroma or fall unhealthy with it', () => {
    const { services } = load('docker/compose.yml');
    expect(services.api.depends_on!.chromadb).toEqual({ condition: 'service_started', required: false });
    const check = services.api.healthcheck!.test.join(' ');
    expect(check).toContain("/health'");
    expect(check).not.toContain('/health/ready');
  });
});

describe('the mail catcher (scripts/dev-mail.mjs)', () => {
  let mail: { url: string; messages: unknown[]; close: () => Promise<void> };
  beforeAll(async () => {
    mail = (await startDevMail({ port: 0 })) as typeof mail;
  });
  afterAll(async () => {
    await mail?.close();
  });

  it('answers the provider API as Resend does and shows the messages in its inbox', async () => {
    const one = await fetch(`${mail.url}/emails`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer dev' },
      body: JSON.stringify({
        from: 'a@example.com',
        to: ['ada@example.com'],
        subject: 'Welcome <Ada>',
        html: '<p>Hi</p>',
      }),
    });
    expect(one.status).toBe(200);
    const { id } = (await one.json()) as { id: string };
    const batch = await fetch(`${mail.url}/emails/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([
        { from: 'a@example.com', to: 'bob@example.com', subject: 'News', text: 'plain' },
      ]),
    });
    expect(((await batch.json()) as { data: { id: string }[] }).data).toHaveLength(1);
    const inbox = await (await fetch(`${mail.url}/`)).text();
    expect(inbox).toContain('Welcome &lt;Ada&gt;');
    expect(inbox).toContain('Development inbox (2)');
    expect(await (await fetch(`${mail.url}/messages/${id}`)).text()).toBe('<p>Hi</p>');
    expect((await fetch(`${mail.url}/emails`, { method: 'POST', body: 'nope' })).status).toBe(422);
  });
});
