import { describe, expect, it } from '@jest/globals';
import { isDeadlock, isForeignKeyViolation, isValueTooLong } from './database-errors.js';

/** The shapes Prisma 7 with the PrismaPg adapter produces (seen in tests against PostgreSQL). */
const prismaError = (code: string, sqlState: string) => ({
  name: 'PrismaClientKnownRequestError',
  code,
  meta: { driverAdapterError: { name: 'DriverAdapterError', cause: { originalCode: sqlState } } },
});

describe('database error recognition', () => {
  it('recognises a value too long from a model query, a raw query, pg itself and a wrapped cause', () => {
    expect(isValueTooLong(prismaError('P2000', '22001'))).toBe(true);
    expect(isValueTooLong(prismaError('P2010', '22001'))).toBe(true);
    expect(isValueTooLong({ name: 'error', code: '22001' })).toBe(true);
    expect(isValueTooLong(new Error('wrapped', { cause: prismaError('P2000', '22001') }))).toBe(true);
  });

  it('recognises a foreign key violation the same ways', () => {
    expect(isForeignKeyViolation(prismaError('P2003', '23503'))).toBe(true);
    expect(isForeignKeyViolation(prismaError('P2010', '23503'))).toBe(true);
    expect(isForeignKeyViolation({ code: '23503' })).toBe(true);
  });

  it('recognises a deadlock from a raw query, a transaction and pg itself', () => {
    expect(isDeadlock(prismaError('P2010', '40P01'))).toBe(true);
    expect(isDeadlock({ code: 'P2034' })).toBe(true);
    expect(isDeadlock({ code: '40P01' })).toBe(true);
    expect(isDeadlock(prismaError('P2010', '23505'))).toBe(false);
  });

  it('does not confuse the two, or other errors, with either', () => {
    expect(isValueTooLong(prismaError('P2003', '23503'))).toBe(false);
    expect(isForeignKeyViolation(prismaError('P2000', '22001'))).toBe(false);
    for (const other of [prismaError('P2002', '23505'), new Error('boom'), null, undefined, '22001', 22001]) {
      expect(isValueTooLong(other)).toBe(false);
      expect(isForeignKeyViolation(other)).toBe(false);
    }
  });
});
