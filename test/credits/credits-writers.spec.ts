import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findTableWrites, parseSchema } from '../support/static-writers.js';

// The ledger's invariant (users.credit_balance = SUM(delta), both moved in one statement under the user
// row lock) holds only if nothing else writes either of them. That CreditsRepository is their one writer
// is checked with every other table by test/platform/table-ownership.spec.ts (docs/architecture.md,
// "Table ownership"); this spec checks the finer rule: inside it, one statement moves both.

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const WRITER = 'src/modules/credits/credits.repository.ts';

describe('credit_transactions and users.credit_balance are written by one statement', () => {
  it('the ledger insert and the balance update are the same statement (APPLY_SQL)', () => {
    const models = parseSchema(readFileSync(join(ROOT, 'prisma/schema.prisma'), 'utf8'));
    const text = readFileSync(join(ROOT, WRITER), 'utf8');
    const writes = findTableWrites(WRITER, text, models);
    const ledger = writes.filter((w) => w.table === 'credit_transactions');
    const balance = writes.filter((w) => w.table === 'users' && w.columns?.includes('credit_balance'));
    expect(ledger).toHaveLength(1);
    expect(balance).toHaveLength(1);
    expect(balance[0].line).toBe(ledger[0].line);
    expect(text.split('\n')[ledger[0].line - 1]).toMatch(/^const APPLY_SQL = `/);
    // And the detector sees two separate statements as two (so the equality above can fail).
    const split = findTableWrites(
      'sample.ts',
      'const A = `INSERT INTO credit_transactions (id) VALUES (1)`;\nconst B = `UPDATE users SET credit_balance = 0`;',
      models,
    );
    expect(split.map((w) => w.line)).toEqual([1, 2]);
  });
});
