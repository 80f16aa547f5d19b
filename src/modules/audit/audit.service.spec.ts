import { describe, expect, it } from '@jest/globals';
import type { PrismaService, Db, Tx } from '../../infra/prisma/prisma.service.js';
import type { Prisma } from '../../generated/prisma/client.js';
import type { AuditRepository } from './audit.repository.js';
import { AuditService } from './audit.service.js';

/** What Prisma 7 (PrismaPg adapter) throws when audit_logs.user_id names no user. */
const fkViolation = () =>
  Object.assign(new Error('Foreign key constraint violated on the constraint: `audit_logs_user_id_fkey`'), {
    name: 'PrismaClientKnownRequestError',
    code: 'P2003',
    meta: { driverAdapterError: { cause: { originalCode: '23503' } } },
  });

/** A repository that fails the first `failures` inserts with the given error and records every attempt. */
function fakeRepository(failures: number, error: () => Error = fkViolation) {
  const attempts: { db: Db; data: Prisma.AuditLogUncheckedCreateInput }[] = [];
  const repository = {
    insert: async (db: Db, data: Prisma.AuditLogUncheckedCreateInput) => {
      attempts.push({ db, data });
      if (attempts.length <= failures) throw error();
      return { id: 'entry' };
    },
  };
  return { attempts, repository: repository as unknown as AuditRepository };
}

const prisma = { name: 'prisma' } as unknown as PrismaService;
const entry = { actor: 'user:user_gone', action: 'user.exported', userId: 'user_gone', resourceType: 'user' };

describe('AuditService.recordStandalone and record', () => {
  it('keeps the entry with a null user link when the user was erased just before the write', async () => {
    const { attempts, repository } = fakeRepository(1);
    await new AuditService(prisma, repository).recordStandalone(entry);
    expect(attempts.map((a) => a.data.userId)).toEqual(['user_gone', null]);
    expect(attempts[1].data).toMatchObject({ actor: 'user:user_gone', action: 'user.exported' });
    expect(attempts.every((a) => a.db === prisma)).toBe(true);
  });

  it('retries only once', async () => {
    const { attempts, repository } = fakeRepository(2);
    await expect(new AuditService(prisma, repository).recordStandalone(entry)).rejects.toMatchObject({
      code: 'P2003',
    });
    expect(attempts).toHaveLength(2);
  });

  it('does not retry inside a transaction, whose failed statement has aborted it', async () => {
    const { attempts, repository } = fakeRepository(1);
    const tx = { name: 'tx' } as unknown as Tx;
    await expect(new AuditService(prisma, repository).record(tx, entry)).rejects.toMatchObject({
      code: 'P2003',
    });
    expect(attempts).toHaveLength(1);
  });

  it('does not retry other errors, or entries without a user', async () => {
    const other = fakeRepository(1, () => Object.assign(new Error('unique'), { code: 'P2002' }));
    await expect(new AuditService(prisma, other.repository).recordStandalone(entry)).rejects.toThrow(
      'unique',
    );
    expect(other.attempts).toHaveLength(1);
    const userless = fakeRepository(1);
    await expect(
      new AuditService(prisma, userless.repository).recordStandalone({ ...entry, userId: null }),
    ).rejects.toMatchObject({ code: 'P2003' });
    expect(userless.attempts).toHaveLength(1);
  });
});
