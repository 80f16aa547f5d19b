import { describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  findTableWrites,
  type Ownership,
  ownershipProblems,
  parseOwnership,
  parseSchema,
  sourceFiles,
} from '../support/static-writers.js';

// Issue 16 item 2: every table has one writing file. The map is the "Table ownership" section of
// docs/architecture.md (the one source: the test reads the document, so the two cannot disagree).

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const models = parseSchema(readFileSync(join(ROOT, 'prisma/schema.prisma'), 'utf8'));
const ownership = parseOwnership(readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8'));
const srcFiles = () =>
  sourceFiles(join(ROOT, 'src')).map((path) => ({
    path: relative(ROOT, path),
    text: readFileSync(path, 'utf8'),
  }));

const USERS_OWNER = 'src/modules/users/users.repository.ts';
const TIER_OWNER = 'src/modules/billing/subscriptions/billing-users.repository.ts';
const LEDGER_OWNER = 'src/modules/credits/credits.repository.ts';
const SAMPLE = 'src/modules/sample/sample.ts';
/** The real map, checked against one sample file (and the owners, which write nothing in the sample). */
const sampleProblems = (code: string, map: Ownership = ownership) =>
  ownershipProblems([{ path: SAMPLE, text: code }], models, map).filter((p) => p.startsWith(`${SAMPLE}:`));

describe('every table has one writing file (docs/architecture.md, "Table ownership")', () => {
  it('the map names an owner for every table of the schema, and only existing tables, columns and files', () => {
    const mapped = new Set(ownership.owners.map((row) => row.table));
    expect(models.map((m) => m.table).filter((table) => !mapped.has(table))).toEqual([]);
    expect(models.length).toBeGreaterThan(20);
    const problems = ownershipProblems([], models, ownership, (path) => existsSync(join(ROOT, path)));
    // With no source files, only the pending rows are unused: everything else about the map is valid.
    expect(problems.filter((p) => !p.includes('no longer writes'))).toEqual([]);
  });

  it('no file writes a table (or a column group) it does not own', () => {
    const problems = ownershipProblems(srcFiles(), models, ownership, (path) => existsSync(join(ROOT, path)));
    expect(problems).toEqual([]);
  });

  it('the column groups keep their one writer: current_tier (billing tier path), credit_balance (ledger)', () => {
    const owners = (column: string) =>
      ownership.owners.find((row) => row.table === 'users' && row.columns?.includes(column))?.owner;
    expect(owners('current_tier')).toBe(TIER_OWNER);
    expect(owners('credit_balance')).toBe(LEDGER_OWNER);
    expect(ownership.owners.find((row) => row.table === 'credit_transactions')?.owner).toBe(LEDGER_OWNER);
    // The owners do write them (the detector sees the real statements, so the check is not vacuous).
    const writesOf = (path: string) => findTableWrites(path, readFileSync(join(ROOT, path), 'utf8'), models);
    expect(writesOf(TIER_OWNER).some((w) => w.table === 'users' && w.columns?.includes('current_tier'))).toBe(
      true,
    );
    const ledger = writesOf(LEDGER_OWNER);
    expect(ledger.some((w) => w.table === 'credit_transactions')).toBe(true);
    expect(ledger.some((w) => w.table === 'users' && w.columns?.includes('credit_balance'))).toBe(true);
  });

  it('a table without a row fails with the row to add; a stale row fails too', () => {
    const withNewTable = [
      ...models,
      {
        model: 'CreditPack',
        delegate: 'creditPack',
        table: 'credit_packs',
        columns: new Map(),
        relations: new Map(),
      },
    ];
    const writer = {
      path: 'src/modules/credits/credit-packs.repository.ts',
      text: 'db.creditPack.create({ data });',
    };
    expect(ownershipProblems([writer], withNewTable, ownership)).toContainEqual(
      'table "credit_packs" has no owner: add the row | `credit_packs` | | ' +
        '`src/modules/credits/credit-packs.repository.ts` | to the "Table ownership" section of docs/architecture.md',
    );
    const stale: Ownership = {
      ...ownership,
      owners: [...ownership.owners, { table: 'gone', columns: null, owner: USERS_OWNER }],
    };
    expect(ownershipProblems([], models, stale)).toContain(
      'map row for "gone": no such table in prisma/schema.prisma; remove the row',
    );
    expect(
      ownershipProblems([], models, ownership, () => false).some((p) => p.includes('does not exist')),
    ).toBe(true);
  });

  it('detects every write shape it claims (the check can fail)', () => {
    const writes: [string, string, string][] = [
      // [shape, code, what the problem must name]
      [
        'prisma create',
        `tx.creditTransaction.create({ data: { userId, delta, kind, jobId } });`,
        'credit_transactions',
      ],
      ['prisma update, no columns', `db.apiKey.update({ where: { id }, data: {} });`, 'api_keys'],
      ['prisma createMany', `tx.payment.createMany({ data: rows });`, 'payments'],
      ['prisma update', `db.subscription.update({ where: { id }, data: { tier } });`, 'subscriptions'],
      ['prisma upsert', `db.syncCheckpoint.upsert({ where, create, update });`, 'sync_checkpoints'],
      ['prisma deleteMany', `db.webhookEvent.deleteMany({ where: { id } });`, 'webhook_events'],
      ['this.prisma', `this.prisma.jobRun.updateMany({ where, data });`, 'job_runs'],
      ['element access', `db['creditTransaction'].delete({ where: { id } });`, 'credit_transactions'],
      [
        'escaping delegate',
        `const ledger = tx.creditTransaction; await ledger.create({ data });`,
        'credit_transactions',
      ],
      ['delegate handed out', `defineOwnedResource({ table: (db) => db.workspace });`, 'workspaces'],
      [
        'nested create',
        `db.user.update({ where, data: { creditTransactions: { create: row } } });`,
        'credit_transactions',
      ],
      [
        'users, unknown columns',
        `db.user.update({ where: { id }, data });`,
        'users, whose one writer is ' + USERS_OWNER,
      ],
      ['users, default group', `db.user.updateMany({ where, data: { locale: 'en' } });`, USERS_OWNER],
      ['users delete', `tx.$executeRaw\`DELETE FROM users WHERE id = \${id}::uuid\`;`, USERS_OWNER],
      [
        'sql template',
        `tx.$executeRaw\`UPDATE webhook_events SET payload = '{}' WHERE id = \${id}\`;`,
        'webhook_events',
      ],
      [
        'sql string',
        `pool.query('INSERT INTO audit_logs (id, action) VALUES ($1, $2)', [id, a]);`,
        'audit_logs',
      ],
      [
        'sql schema',
        `tx.$executeRaw\`DELETE FROM "public"."credit_holds" WHERE job_id = \${id}\`;`,
        'credit_holds',
      ],
      ['sql truncate', `tx.$executeRawUnsafe('TRUNCATE credit_transactions');`, 'credit_transactions'],
      ['sql concatenated', `db.$executeRawUnsafe('DELETE FROM ' + 'outbox WHERE id = $1', id);`, 'outbox'],
      [
        'sql in a CTE',
        `db.$queryRaw\`WITH x AS (INSERT INTO feedback (id) VALUES (1)) SELECT 1\`;`,
        'feedback',
      ],
      // The column groups of users.
      [
        'tier data',
        `db.user.update({ where: { id }, data: { currentTier: 'PRO' } });`,
        'users (current_tier',
      ],
      [
        'tier upsert create',
        `db.user.upsert({ where, create: { id, currentTier }, update: {} });`,
        'current_tier',
      ],
      [
        'tier upsert update',
        `db.user.upsert({ where, create: { id }, update: { currentTier: t } });`,
        'current_tier',
      ],
      ['tier assignment', `user.currentTier = 'TEAM';`, 'current_tier'],
      ['tier element assignment', `user['currentTier'] = 'TEAM';`, 'current_tier'],
      [
        'tier variable',
        `const data = { currentTier: t }; await db.user.update({ where: { id }, data });`,
        'current_tier',
      ],
      [
        'tier spread',
        `const patch = { currentTier }; db.user.update({ where, data: { ...patch } });`,
        'current_tier',
      ],
      [
        'tier via a generic update',
        `await this.users.update(tx, id, { currentTier: 'PRO' });`,
        'current_tier',
      ],
      [
        'tier conditional',
        `db.user.update({ where, data: paid ? { currentTier: t } : {} });`,
        'current_tier',
      ],
      [
        'tier nested',
        `db.subscription.update({ where, data: { user: { update: { currentTier: t } } } });`,
        'current_tier',
      ],
      [
        'tier sql',
        `db.$executeRaw\`UPDATE users SET locale = 'x', current_tier = \${t} WHERE id = \${id}\`;`,
        'current_tier',
      ],
      [
        'tier sql insert',
        `db.$executeRaw\`INSERT INTO users (id, current_tier) VALUES (\${id}, 'PRO')\`;`,
        'current_tier',
      ],
      [
        'tier sql alias',
        `db.$executeRaw\`UPDATE users AS u SET current_tier = \${t} WHERE u.id = \${id}\`;`,
        'current_tier',
      ],
      ['tier sql bare alias', `db.$executeRaw\`UPDATE users u SET current_tier = \${t}\`;`, 'current_tier'],
      [
        'tier sql schema',
        `db.$executeRaw\`UPDATE "public"."users" SET "current_tier" = \${t}\`;`,
        'current_tier',
      ],
      [
        'tier sql upsert',
        `db.$executeRaw\`INSERT INTO users (id) VALUES (1) ON CONFLICT (id) DO UPDATE SET current_tier = 'PRO'\`;`,
        'current_tier',
      ],
      [
        'tier sql concatenated',
        `db.$executeRawUnsafe('UPDATE users ' + 'SET current_tier = $1', t);`,
        'current_tier',
      ],
      [
        'balance data',
        `db.user.update({ where: { id }, data: { creditBalance: { increment: 5 } } });`,
        'credit_balance',
      ],
      ['balance assignment', `user.creditBalance += 5;`, 'credit_balance'],
      [
        'balance sql',
        `tx.$executeRaw\`UPDATE users u SET credit_balance = credit_balance + \${n}\`;`,
        'credit_balance',
      ],
      [
        'balance sql concatenated',
        `tx.$executeRawUnsafe('UPDATE users SET ' + 'credit_balance = 0');`,
        'credit_balance',
      ],
    ];
    for (const [shape, code, names] of writes) {
      const problems = sampleProblems(code);
      expect([shape, problems.length > 0 && problems.every((p) => p.startsWith(`${SAMPLE}:`))]).toEqual([
        shape,
        true,
      ]);
      expect([shape, problems.some((p) => p.includes(names))]).toEqual([shape, true]);
    }
    // A write of current_tier names the tier path's owner, not the users repository.
    expect(sampleProblems(`db.user.update({ where: { id }, data: { currentTier: 'PRO' } });`)).toEqual([
      expect.stringContaining(
        `writes users (current_tier, billing_customer_id), whose one writer is ${TIER_OWNER}`,
      ),
    ]);
    // Linking a row is not a write of the linked table.
    expect(sampleProblems(`db.subscription.create({ data: { tier, user: { connect: { id } } } });`)).toEqual([
      expect.stringMatching(/ writes subscriptions, /),
    ]);
    // The line of the write is given.
    expect(sampleProblems(`\n\n  tx.$executeRaw\`DELETE FROM outbox\`;`)[0]).toMatch(
      new RegExp(`^${SAMPLE}:3 writes outbox`),
    );
  });

  it('reads, rows in memory and service calls are not writes', () => {
    const reads = `
      db.user.findMany({ where: { currentTier: { in: tiers } }, select: { currentTier: true } });
      db.user.count({ where: { currentTier: 'PRO' } });
      db.creditTransaction.findMany({ where: { userId }, orderBy: [{ createdAt: 'desc' }] });
      db.creditTransaction.findUnique({ where: { jobId_kind: { jobId, kind } } });
      db.user.findMany({ include: { creditTransactions: true } });
      const where: Prisma.UserWhereInput = { ...(tier ? { currentTier: tier } : {}) };
      const body = { current_tier: user.currentTier, credit_balance: user.creditBalance };
      const limits = tierLimits(config, principal.user.currentTier);
      const owner = principal.user; const sub = row.subscription;
      await this.feedback.create(user, dto);
      await this.users.update(tx, id, { locale: 'en' });
      db.$queryRaw\`SELECT current_tier FROM users WHERE current_tier <> 'FREE' FOR UPDATE\`;
      db.$queryRaw\`SELECT SUM(delta) FROM credit_transactions WHERE user_id = \${id}\`;
      db.$executeRaw\`UPDATE users_archive SET note = 'current_tier'\`;
      db.$executeRaw\`SELECT pg_advisory_xact_lock(hashtext('outbox'))\`;`;
    const problems = sampleProblems(reads);
    expect(problems).toEqual([]);
  });

  it('a pending second writer is allowed only while it writes, and only the table it is listed for', () => {
    const map: Ownership = { ...ownership, pending: [{ table: 'audit_logs', file: SAMPLE }] };
    expect(sampleProblems(`pool.query('INSERT INTO audit_logs (id) VALUES ($1)', [id]);`, map)).toEqual([]);
    expect(
      sampleProblems(`pool.query('INSERT INTO email_messages (id) VALUES ($1)', [id]);`, map),
    ).toHaveLength(1);
    expect(ownershipProblems([{ path: SAMPLE, text: '' }], models, map)).toContain(
      `${SAMPLE} no longer writes audit_logs: delete its row from "Second writers waiting to move" in docs/architecture.md`,
    );
  });
});
