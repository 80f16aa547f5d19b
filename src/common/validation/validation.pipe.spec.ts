import { describe, expect, it } from '@jest/globals';
import { MAX_INPUT_DEPTH, unsafeInputProblem } from './validation.pipe.js';

describe('unsafeInputProblem (what class-transformer cannot walk safely)', () => {
  it('lets ordinary bodies through', () => {
    expect(unsafeInputProblem({ name: 'n', filters: { a: [1, { b: null }] } })).toBeNull();
    expect(unsafeInputProblem('text')).toBeNull();
    expect(unsafeInputProblem(undefined)).toBeNull();
  });

  it('refuses __proto__ and constructor keys at any depth, naming the field', () => {
    expect(unsafeInputProblem(JSON.parse('{"a":{"__proto__":{"x":1}}}'))).toEqual({
      field: 'a.__proto__',
      message: 'the key "__proto__" is not allowed',
    });
    expect(unsafeInputProblem({ list: [{ constructor: 1 }] })?.field).toBe('list.0.constructor');
  });

  it('refuses nesting beyond the limit without overflowing the stack itself', () => {
    const deep = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`);
    expect(unsafeInputProblem(deep)?.message).toMatch(/nested deeper/);
    const justFits = JSON.parse(`${'['.repeat(MAX_INPUT_DEPTH)}${']'.repeat(MAX_INPUT_DEPTH)}`);
    expect(unsafeInputProblem(justFits)).toBeNull();
  });
});
