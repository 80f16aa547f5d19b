import { describe, expect, it } from '@jest/globals';
import { IsISO8601, validateSync } from 'class-validator';
import { HasFourDigitYear, HasNoNul } from './field-validators.js';

class Probe {
  @HasNoNul()
  text = '';

  @IsISO8601({ strict: true })
  @HasFourDigitYear()
  at = '2026-01-01T00:00:00Z';
}

const errors = (values: Partial<Probe>) =>
  validateSync(Object.assign(new Probe(), values)).flatMap((e) => Object.values(e.constraints ?? {}));

describe('field validators', () => {
  it('refuses NUL characters and keeps other text, newlines included', () => {
    expect(errors({ text: 'line one\nline two\ttab 😀' })).toEqual([]);
    expect(errors({ text: 'a\u0000b' })).toEqual(['text must not contain NUL characters']);
  });

  it('refuses date-times with signed or expanded years', () => {
    expect(errors({ at: '1000-01-01T00:00:00Z' })).toEqual([]);
    expect(errors({ at: '9999-12-31T23:59:59.999Z' })).toEqual([]);
    expect(errors({ at: '-4714-01-01T00:00:00Z' })).toEqual([
      'at must be a date-time with a four-digit year',
    ]);
    // Not a date at all: IsISO8601's single error, not a second one from this check.
    expect(errors({ at: 'next week' })).toEqual(['at must be a valid ISO 8601 date string']);
  });
});
