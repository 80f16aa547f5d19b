import { describe, expect, it } from '@jest/globals';
import { validateSync } from 'class-validator';
import { ISO_FORMS_DATE_CANNOT_READ } from '../../../test/support/instants.js';
import { codePointLength, HasNoNul, IsInstant, MaxCodePoints } from './field-validators.js';

class Probe {
  @HasNoNul()
  text = '';

  @IsInstant()
  at: unknown = '2026-01-01T00:00:00Z';

  @MaxCodePoints(3)
  short: unknown = 'abc';
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
    // Not a date at all: one error, the ISO 8601 one.
    expect(errors({ at: 'next week' })).toEqual(['at must be a valid ISO 8601 date string']);
    for (const at of [5, null, ['2026-01-01T00:00:00Z']]) {
      expect(errors({ at })).toEqual(['at must be a valid ISO 8601 date string']);
    }
  });

  it("refuses ISO 8601 forms JavaScript's Date cannot read (they became Invalid Dates: 500)", () => {
    for (const at of ISO_FORMS_DATE_CANNOT_READ) {
      expect(Number.isNaN(Date.parse(at))).toBe(true);
      expect({ at, errors: errors({ at }) }).toEqual({
        at,
        errors: ['at must be a date-time such as 2026-01-01T00:00:00Z'],
      });
    }
  });

  it('accepts the extended forms JavaScript reads', () => {
    for (const at of [
      '2026',
      '2026-01',
      '2026-01-01',
      '2026-01-01T10:00',
      '2026-01-01T10:00:00Z',
      '2026-01-01T10:00:00.123+01:00',
      '2026-01-01T10:00:00.123456789-05:30',
      new Date(0).toISOString(),
    ]) {
      expect({ at, errors: errors({ at }) }).toEqual({ at, errors: [] });
    }
  });
});

describe('MaxCodePoints', () => {
  it('counts code points, as PostgreSQL counts VARCHAR(n), not what class-validator Length counts', () => {
    expect(codePointLength('')).toBe(0);
    expect(codePointLength('abc')).toBe(3);
    expect(codePointLength('🏠🏠')).toBe(2); // astral: two UTF-16 units each, one code point
    expect(codePointLength('❤️')).toBe(2); // U+2764 U+FE0F: Length counts it as one
    expect(codePointLength('a\uFE0F')).toBe(2);
    expect(codePointLength('e\u0301')).toBe(2); // a combining accent is its own code point
    expect(codePointLength('\uD800')).toBe(1); // a lone surrogate counts once
  });

  it('accepts up to the limit and refuses one code point more, naming the limit', () => {
    for (const short of ['', 'abc', '🏠🏠🏠', '❤\uFE0F', 'a\uFE0Eb']) expect(errors({ short })).toEqual([]);
    for (const short of ['abcd', '❤️❤️', 'a\uFE0Fb\uFE0F', '🏠🏠🏠🏠']) {
      expect(errors({ short })).toEqual(['short must be at most 3 characters']);
    }
  });

  it('leaves non-strings to the type check', () => {
    for (const short of [5, null, undefined, ['abcd']]) expect(errors({ short })).toEqual([]);
  });
});
