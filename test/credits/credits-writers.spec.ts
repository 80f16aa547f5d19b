import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  findWrites,
  sourceFiles,
  sqlTable,
  sqlWritesColumn,
  type WriteRules,
} from '../support/static-writers.js';

// The ledger's invariant (users.credit_balance = SUM(delta), both moved in one statement under the user
// row lock) holds only if nothing else writes either of them: CreditsRepository is the one writer.

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ALLOWED_WRITER = 'src/modules/credits/credits.repository.ts';
const LEDGER = sqlTable('credit_transactions');
const RULES: WriteRules = {
  // creditTransactions: the User relation, through which a nested write could create ledger rows.
  fields: new Set(['creditBalance', 'credit_balance', 'creditTransactions']),
  models: new Set(['creditTransaction']),
  sql: [
    new RegExp(
      `\\b(?:INSERT\\s+INTO|UPDATE(?:\\s+ONLY)?|DELETE\\s+FROM|TRUNCATE(?:\\s+TABLE)?|MERGE\\s+INTO|COPY)\\s+${LEDGER}`,
      'i',
    ),
    ...sqlWritesColumn('users', 'credit_balance'),
  ],
};
const ledgerWrites = (fileName: string, text: string) => findWrites(fileName, text, RULES);

describe('credit_transactions and users.credit_balance have one writer', () => {
  it('detects the write shapes it looks for (the check can fail)', () => {
    const writes: [string, string][] = [
      ['prisma create', `tx.creditTransaction.create({ data: { userId, delta, kind, jobId } });`],
      ['prisma createMany', `tx.creditTransaction.createMany({ data: rows });`],
      ['prisma update', `db.creditTransaction.update({ where: { id }, data: { delta: 0 } });`],
      ['prisma upsert', `db.creditTransaction.upsert({ where, create, update });`],
      ['prisma delete', `db.creditTransaction.deleteMany({ where: { userId } });`],
      ['element access', `db['creditTransaction'].delete({ where: { id } });`],
      ['escaping delegate', `const ledger = tx.creditTransaction; await ledger.create({ data });`],
      ['nested create', `db.user.update({ where: { id }, data: { creditTransactions: { create: row } } });`],
      ['balance data', `db.user.update({ where: { id }, data: { creditBalance: { increment: 5 } } });`],
      ['balance variable', `const data = { creditBalance: 0 }; await db.user.update({ where, data });`],
      ['balance assignment', `user.creditBalance += 5;`],
      ['sql insert', `tx.$executeRaw\`INSERT INTO credit_transactions (id) VALUES (\${id})\`;`],
      ['sql schema', `tx.$executeRaw\`DELETE FROM "public"."credit_transactions" WHERE id = \${id}\`;`],
      ['sql update', `tx.$executeRaw\`UPDATE credit_transactions AS c SET delta = 0\`;`],
      ['sql truncate', `tx.$executeRawUnsafe('TRUNCATE credit_transactions');`],
      ['sql balance', `tx.$executeRaw\`UPDATE users u SET credit_balance = credit_balance + \${n}\`;`],
      ['sql balance schema', `tx.$executeRaw\`UPDATE "public"."users" SET "credit_balance" = 0\`;`],
      ['sql balance insert', `tx.$executeRaw\`INSERT INTO users (id, credit_balance) VALUES (\${id}, 5)\`;`],
      ['sql concatenated', `tx.$executeRawUnsafe('UPDATE users SET ' + 'credit_balance = 0');`],
    ];
    for (const [shape, code] of writes) {
      expect([shape, ledgerWrites('sample.ts', code).length]).toEqual([shape, 1]);
    }
    const reads = `
      db.creditTransaction.findMany({ where: { userId }, orderBy: [{ createdAt: 'desc' }] });
      db.creditTransaction.count({ where: { userId } });
      db.creditTransaction.findUnique({ where: { jobId_kind: { jobId, kind } } });
      db.user.findUnique({ where: { id }, select: { creditBalance: true } });
      db.user.findMany({ include: { creditTransactions: true } });
      const body = { credit_balance: user.creditBalance };
      db.$queryRaw\`SELECT credit_balance FROM users WHERE id = \${id} FOR UPDATE\`;
      db.$queryRaw\`SELECT SUM(delta) FROM credit_transactions WHERE user_id = \${id}\`;
      db.$executeRaw\`UPDATE users SET locale = 'x' WHERE credit_balance > 0\`;`;
    expect(ledgerWrites('reads.ts', reads)).toEqual([]);
  });

  it('no code outside CreditsRepository writes the ledger or the cached balance', () => {
    const offenders = sourceFiles(join(ROOT, 'src'))
      .map((path) => ({ path: relative(ROOT, path), writes: ledgerWrites(path, readFileSync(path, 'utf8')) }))
      .filter((file) => file.writes.length > 0);
    expect(offenders.map((file) => file.path)).toEqual([ALLOWED_WRITER]);
    // The one statement that inserts the row and moves the cached balance together.
    expect(offenders[0].writes).toHaveLength(1);
    const line = Number(offenders[0].writes[0].split(':')[0]);
    const source = readFileSync(join(ROOT, ALLOWED_WRITER), 'utf8').split('\n');
    expect(source[line - 1]).toMatch(/^const APPLY_SQL = `/);
    expect(source.slice(line - 1, line + 30).join('\n')).toMatch(
      /INSERT INTO credit_transactions[\s\S]*UPDATE users SET credit_balance/,
    );
  });
});
