import { describe, expect, it } from '@jest/globals';
import { isUuid } from '../../common/validation/uuid.js';
import { JSON_FIELD_MAX_BYTES, JSON_FIELD_MAX_DEPTH, jsonObjectProblem } from './owned-validators.js';

const nested = (depth: number): Record<string, unknown> => {
  let value: Record<string, unknown> = {};
  for (let i = 1; i < depth; i += 1) value = { a: value };
  return value;
};

describe('jsonObjectProblem (free-form JSON object fields)', () => {
  it('accepts objects with any JSON values inside', () => {
    expect(jsonObjectProblem({})).toBeNull();
    expect(jsonObjectProblem({ a: [1, 'x', null, true, { b: [] }], 'ключ 🏠': 'значение' })).toBeNull();
    expect(jsonObjectProblem(nested(JSON_FIELD_MAX_DEPTH))).toBeNull();
  });

  it.each([
    ['an array', [1]],
    ['null', null],
    ['a string', '{}'],
    ['a number', 1],
  ])('refuses %s', (_case, value) => {
    expect(jsonObjectProblem(value)).toBe('must be a JSON object');
  });

  it('refuses nesting deeper than the limit, NUL characters and oversized objects', () => {
    expect(jsonObjectProblem(nested(JSON_FIELD_MAX_DEPTH + 1))).toMatch(/nested deeper/);
    expect(jsonObjectProblem({ a: ['ok', 'bad\u0000'] })).toMatch(/NUL/);
    expect(jsonObjectProblem({ 'bad\u0000key': 1 })).toMatch(/NUL/);
    expect(jsonObjectProblem({ a: ['\ud800'] })).toMatch(/surrogates/);
    expect(jsonObjectProblem({ '\udfffkey': 1 })).toMatch(/surrogates/);
    expect(jsonObjectProblem({ a: '😀 paired is fine' })).toBeNull();
    expect(jsonObjectProblem({ a: 'x'.repeat(JSON_FIELD_MAX_BYTES) })).toMatch(/bytes/);
    // Multi-byte characters count as the bytes they take.
    expect(jsonObjectProblem({ a: 'é'.repeat(JSON_FIELD_MAX_BYTES / 2) })).toMatch(/bytes/);
  });
});

describe('isUuid', () => {
  it('accepts canonical UUIDs of any version and case', () => {
    expect(isUuid('6f1c1f0e-8a53-4c9b-9d1e-3b5c2a7e4d10')).toBe(true);
    expect(isUuid('6F1C1F0E-8A53-4C9B-9D1E-3B5C2A7E4D10')).toBe(true);
    expect(isUuid('00000000-0000-0000-0000-000000000000')).toBe(true);
  });

  it.each([
    '',
    'nope',
    '6f1c1f0e8a534c9b9d1e3b5c2a7e4d10',
    '{6f1c1f0e-8a53-4c9b-9d1e-3b5c2a7e4d10}',
    '6f1c1f0e-8a53-4c9b-9d1e-3b5c2a7e4d10\n',
    'g0000000-0000-0000-0000-000000000000',
  ])('refuses %p', (value) => {
    expect(isUuid(value)).toBe(false);
  });
});
