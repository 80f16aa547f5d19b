import { describe, expect, it } from '@jest/globals';
import { isRedactedPayload } from './webhook-inbox.repository.js';

describe('isRedactedPayload: the erasure scrubs’ redactions, and nothing a provider sends', () => {
  it.each([
    ['an e-mail or identity row', { redacted: true, type: 'email.bounced' }],
    ['a row without a type', { redacted: true }],
    // scrubIdentityArchive keeps a user.deleted row's identity id for the deletion guard.
    ['an identity user.deleted row', { redacted: true, type: 'user.deleted', data: { id: 'user_2x' } }],
  ])('recognises %s', (_name, payload) => {
    expect(isRedactedPayload(payload)).toBe(true);
  });

  it.each([
    ['a Resend event', { type: 'email.bounced', created_at: '2024-11-22T23:41:12.126Z', data: {} }],
    ['a raw event that says redacted among its fields', { redacted: true, type: 'x', created_at: 'now' }],
    [
      'redacted data with more than the id',
      { redacted: true, type: 'user.deleted', data: { id: 'u', e: 1 } },
    ],
    ['data that is not an object', { redacted: true, type: 'user.deleted', data: 'user_2x' }],
    ['redacted not true', { redacted: 'true', type: 'email.bounced' }],
    ['an array', [{ redacted: true }]],
    ['null', null],
    ['a string', 'redacted'],
  ])('does not take %s for a redaction', (_name, payload) => {
    expect(isRedactedPayload(payload)).toBe(false);
  });
});
