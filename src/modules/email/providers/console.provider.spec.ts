import { afterEach, describe, expect, it, jest } from '@jest/globals';
import type { AppConfig } from '../../../config/app-config.js';
import type { OutboundEmail } from '../email.types.js';
import { ConsoleEmailProvider } from './console.provider.js';

const message = (to: string, unsubscribe = true): OutboundEmail => ({
  to,
  from: 'Acme <news@acme.test>',
  subject: 'News from Acme',
  html: '<p>Hello</p>',
  text: 'Hello in plain text',
  headers: unsubscribe
    ? {
        'List-Unsubscribe': '<https://app.example.test/api/v1/email/unsubscribe?t=abc.def>',
        'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
      }
    : {},
  idempotencyKey: `nl-${to}`,
});

describe('ConsoleEmailProvider', () => {
  afterEach(() => {
    jest.restoreAllMocks();
  });

  const printed = (env: AppConfig['env'], send: (p: ConsoleEmailProvider) => Promise<unknown>) => {
    const out: string[] = [];
    jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      out.push(String(chunk));
      return true;
    });
    return send(new ConsoleEmailProvider({ env } as AppConfig)).then((result) => ({
      out: out.join(''),
      result,
    }));
  };

  it('prints each message for the developer in development: recipient, subject, text, unsubscribe link', async () => {
    const { out, result } = await printed('development', (p) => p.send(message('dev@example.com')));
    expect(result).toEqual({ id: expect.stringMatching(/^console_[0-9a-f-]{36}$/) });
    expect(out).toContain(`[email:console] ${(result as { id: string }).id} to=dev@example.com`);
    expect(out).toContain('subject="News from Acme"');
    expect(out).toContain('Hello in plain text');
    expect(out).toContain('List-Unsubscribe: <https://app.example.test/api/v1/email/unsubscribe?t=abc.def>');
  });

  it('prints every message of a batch and answers one id per message, in order', async () => {
    const { out, result } = await printed('development', (p) =>
      p.sendBatch([message('a@example.com'), message('b@example.com', false)]),
    );
    const ids = (result as { id: string }[]).map((r) => r.id);
    expect(new Set(ids).size).toBe(2);
    expect(out.indexOf('to=a@example.com')).toBeLessThan(out.indexOf('to=b@example.com'));
    expect(out.match(/List-Unsubscribe:/g)).toHaveLength(1);
  });

  it('stays quiet outside development (tests, and a deployed console provider)', async () => {
    for (const env of ['test', 'staging', 'production'] as const) {
      const { out } = await printed(env, (p) => p.send(message('quiet@example.com')));
      expect([env, out]).toEqual([env, '']);
    }
  });
});
