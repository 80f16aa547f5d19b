import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { IsString } from 'class-validator';
import { ValidationError } from '../errors/app-error.js';
import { NestedDto } from './nested.js';
import { createValidationPipe } from './validation.pipe.js';

class Item {
  @IsString()
  name!: string;
}

class Probe {
  @NestedDto(() => Item, { each: true })
  items!: Item[];

  @NestedDto(() => Item)
  one!: Item;
}

const SRC = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'generated' ? [] : tsFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });
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

describe('NestedDto (a nested DTO is an object, never an array of them)', () => {
  it('passes objects and validates their fields', async () => {
    expect(await fieldErrors({ items: [{ name: 'a' }], one: { name: 'b' } })).toEqual([]);
    expect(await fieldErrors({ items: [{ name: 1 }], one: { name: 'b' } })).toEqual([
      { field: 'items.0.name', message: 'name must be a string' },
    ]);
  });

  it.each([
    ['an array of the element', { items: [[{ name: 'a' }]], one: { name: 'b' } }, 'items'],
    ['an empty inner array', { items: [[]], one: { name: 'b' } }, 'items'],
    ['an array next to an object', { items: [{ name: 'a' }, [{ name: 'x' }]], one: { name: 'b' } }, 'items'],
    ['null in the list', { items: [null], one: { name: 'b' } }, 'items'],
    ['an array for the object', { items: [], one: [{ name: 'b' }] }, 'one'],
    ['an empty array for the object', { items: [], one: [] }, 'one'],
  ])('refuses %s, naming the field', async (_case, body, field) => {
    const errors = await fieldErrors(body);
    expect(errors).toContainEqual({
      field,
      message: field === 'items' ? 'each value in items must be an object' : 'one must be an object',
    });
  });

  it('is the only way a DTO under src/ nests another (ValidateNested alone lets arrays through)', () => {
    const own = join(SRC, 'common', 'validation', 'nested.ts');
    const offenders = tsFiles(SRC)
      .filter((file) => file !== own && /\bValidateNested\b/.test(readFileSync(file, 'utf8')))
      .map((file) => relative(SRC, file));
    expect(offenders).toEqual([]);
  });
});
