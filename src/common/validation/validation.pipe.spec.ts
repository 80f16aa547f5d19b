import { describe, expect, it } from '@jest/globals';
import { IsIn, IsInt, IsNotEmpty, IsOptional, IsString, MaxLength, Min } from 'class-validator';
import { ValidationError } from '../errors/app-error.js';
import { createValidationPipe, MAX_INPUT_DEPTH, unsafeInputProblem } from './validation.pipe.js';

class Probe {
  @IsString()
  @IsNotEmpty()
  @MaxLength(10)
  message!: string;

  @IsOptional()
  @IsString()
  @IsIn(['PRO', 'TEAM'])
  tier?: string;

  @IsOptional()
  @IsInt()
  @Min(1)
  count?: number;
}

/** The errors[] the global validation pipe answers for a body, or [] when it passes. */
async function fieldErrors(body: unknown): Promise<{ field: string; message: string }[]> {
  try {
    await createValidationPipe().transform(body, { type: 'body', metatype: Probe });
    return [];
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationError);
    return (err as ValidationError).extensions.errors as { field: string; message: string }[];
  }
}

describe('the validation pipe: one message per field, the one that says what is wrong', () => {
  it('says a missing required field is required, not only its type', async () => {
    expect(await fieldErrors({})).toEqual([{ field: 'message', message: 'message is required' }]);
  });

  it('answers the type error alone when the value has another type', async () => {
    expect(await fieldErrors({ message: ['a'] })).toEqual([
      { field: 'message', message: 'message must be a string' },
    ]);
    expect(await fieldErrors({ message: 'ok', count: 'x' })).toEqual([
      { field: 'count', message: 'count must be an integer number' },
    ]);
  });

  it('names the allowed values with the type error', async () => {
    expect(await fieldErrors({ message: 'ok', tier: 5 })).toEqual([
      { field: 'tier', message: 'tier must be a string (one of the following values: PRO, TEAM)' },
    ]);
  });

  it('lists every failed check of a value of the right type', async () => {
    expect(await fieldErrors({ message: '' })).toEqual([
      { field: 'message', message: 'message should not be empty' },
    ]);
    expect(await fieldErrors({ message: 'ok', tier: 'GOLD' })).toEqual([
      { field: 'tier', message: 'tier must be one of the following values: PRO, TEAM' },
    ]);
  });
});

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
