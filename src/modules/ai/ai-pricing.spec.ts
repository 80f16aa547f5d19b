import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { projectConfig } from '../../config/project.config.js';
import {
  actualCredits,
  creditsForTokens,
  estimateCredits,
  promptTokenBound,
  tierLimits,
} from './ai-pricing.js';
import { meteredJobId } from './idempotency.js';

describe('metered-call pricing', () => {
  it('rounds up to whole credits, at least one per call', () => {
    expect(creditsForTokens(0, 1)).toBe(1);
    expect(creditsForTokens(1000, 1)).toBe(1);
    expect(creditsForTokens(1001, 1)).toBe(2);
    expect(creditsForTokens(3000, 0.1)).toBe(1);
    expect(creditsForTokens(10_000, 0.3)).toBe(3);
    expect(creditsForTokens(250, 10)).toBe(3);
  });

  it('bounds prompt tokens by UTF-8 bytes plus framing, so multi-byte text is not under-reserved', () => {
    expect(promptTokenBound([{ content: 'abcd' }])).toBe(4 + 4 + 3);
    expect(promptTokenBound([{ content: '日本' }, { content: '' }])).toBe(6 + 8 + 3);
  });

  it('never reserves less than the usage the provider can legitimately report', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: 'grapheme', maxLength: 200 }), { minLength: 1, maxLength: 5 }),
        fc.integer({ min: 1, max: 8192 }),
        fc.integer({ min: 0, max: 8192 }),
        fc.constantFrom(0.5, 1, 2, 10),
        (contents, maxTokens, completion, price) => {
          const messages = contents.map((content) => ({ content }));
          const prompt = promptTokenBound(messages);
          const used = Math.min(completion, maxTokens);
          expect(
            actualCredits({ prompt_tokens: prompt, completion_tokens: used }, price),
          ).toBeLessThanOrEqual(estimateCredits(messages, maxTokens, price));
        },
      ),
    );
  });

  it('falls back to FREE limits for a tier missing from the configuration', () => {
    expect(tierLimits(projectConfig, 'LEGACY')).toEqual(projectConfig.tiers.FREE.limits);
    expect(tierLimits(projectConfig, 'PRO').maxTokensPerRequest).toBe(4096);
  });
});

describe('metered job ids', () => {
  const user = '0b7e6f0e-8d0b-4d55-9a3b-2f1d9d3c1a10';

  it('derives a per-user id from the Idempotency-Key and a random one without it', () => {
    expect(meteredJobId(user, 'abc-123')).toBe(`ai-${user}-abc-123`);
    expect(meteredJobId(user, '"abc-123"')).toBe(`ai-${user}-abc-123`);
    expect(meteredJobId(user, undefined)).not.toBe(meteredJobId(user, undefined));
  });

  it('refuses keys outside 1..128 safe characters', () => {
    for (const key of ['', ' ', 'a b', 'x'.repeat(129), 'é', 'a/b', 'a;b']) {
      expect(() => meteredJobId(user, key)).toThrow(/Idempotency-Key/);
    }
  });
});
