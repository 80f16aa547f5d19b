import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import {
  findWrites,
  mentions,
  nameOf,
  sourceFiles,
  sqlWritesColumn,
  type WriteRules,
} from '../support/static-writers.js';

// Spec rule 3: current_tier is server-controlled; only billing webhook processing and the expiry job
// change it. Both go through BillingTierService.recompute, which alone calls
// BillingUsersRepository.setCurrentTier, the single allowed writer.

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ALLOWED_WRITER = 'src/modules/billing/billing-users.repository.ts';
const TIER_SERVICE = 'src/modules/billing/billing-tier.service.ts';
const TIER_CALLERS = [
  // transaction.completed of a renewal applies a tier change that its period end made due.
  'src/modules/billing/payments.service.ts',
  'src/modules/billing/subscription-expiry.service.ts',
  'src/modules/billing/subscription-state.service.ts',
];
const RULES: WriteRules = {
  fields: new Set(['currentTier', 'current_tier']),
  sql: sqlWritesColumn('users', 'current_tier'),
};
const tierWrites = (fileName: string, text: string) => findWrites(fileName, text, RULES);
const srcFiles = () =>
  sourceFiles(join(ROOT, 'src')).map((path) => ({
    path: relative(ROOT, path),
    text: readFileSync(path, 'utf8'),
  }));

/**
 * DTO properties named current_tier that a request could set: the global ValidationPipe refuses any
 * property without a class-validator decorator (forbidNonWhitelisted), so only decorated ones count.
 */
function acceptingDtoProps(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const validators = new Set<string>();
  const hits: string[] = [];
  const visit = (node: ts.Node) => {
    if (
      ts.isImportDeclaration(node) &&
      ts.isStringLiteral(node.moduleSpecifier) &&
      node.moduleSpecifier.text === 'class-validator'
    ) {
      const named = node.importClause?.namedBindings;
      if (named && ts.isNamedImports(named)) for (const el of named.elements) validators.add(el.name.text);
    }
    if (ts.isPropertyDeclaration(node) && /^current_?tier$/i.test(nameOf(node.name) ?? '')) {
      const validated = (ts.getDecorators(node) ?? []).some((d) => {
        const callee = ts.isCallExpression(d.expression) ? d.expression.expression : d.expression;
        return ts.isIdentifier(callee) && validators.has(callee.text);
      });
      if (validated) hits.push(`${fileName}: ${(node.parent as ts.ClassDeclaration).name?.text}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return hits;
}

describe('users.current_tier has one writer', () => {
  it('detects the write shapes it looks for (the check can fail)', () => {
    const writes: [string, string][] = [
      ['prisma data', `db.user.update({ where: { id }, data: { currentTier: 'PRO' } });`],
      ['upsert create', `db.user.upsert({ where: { id }, create: { id, currentTier }, update: {} });`],
      ['upsert update', `db.user.upsert({ where: { id }, create: { id }, update: { currentTier: t } });`],
      ['assignment', `user.currentTier = 'TEAM';`],
      ['element assignment', `user['currentTier'] = 'TEAM';`],
      ['variable', `const data = { currentTier: t }; await db.user.update({ where: { id }, data });`],
      ['variable, spread', `const patch = { currentTier }; db.user.update({ where, data: { ...patch } });`],
      ['whole argument', `const args = { currentTier }; db.user.updateMany(args);`],
      ['assigned later', `let d; d = { currentTier: t }; db.user.update({ where, data: d });`],
      ['conditional', `db.user.update({ where, data: paid ? { currentTier: t } : {} });`],
      ['nested write', `db.subscription.update({ where, data: { user: { update: { currentTier: t } } } });`],
      ['sql', `db.$executeRaw\`UPDATE users SET locale = 'x', current_tier = \${t} WHERE id = \${id}\`;`],
      ['sql insert', `db.$executeRaw\`INSERT INTO users (id, current_tier) VALUES (\${id}, 'PRO')\`;`],
      ['sql alias', `db.$executeRaw\`UPDATE users AS u SET current_tier = \${t} WHERE u.id = \${id}\`;`],
      ['sql bare alias', `db.$executeRaw\`UPDATE users u SET current_tier = \${t}\`;`],
      ['sql schema', `db.$executeRaw\`UPDATE "public"."users" SET "current_tier" = \${t}\`;`],
      [
        'sql upsert',
        `db.$executeRaw\`INSERT INTO users (id) VALUES (1) ON CONFLICT (id) DO UPDATE SET current_tier = 'PRO'\`;`,
      ],
      ['sql concatenated', `db.$executeRawUnsafe('UPDATE users ' + 'SET current_tier = $1', t);`],
    ];
    for (const [shape, code] of writes) {
      expect([shape, tierWrites('sample.ts', code).length]).toEqual([shape, 1]);
    }
    const reads = `
      db.user.findMany({ where: { currentTier: { in: tiers } }, select: { currentTier: true } });
      db.user.count({ where: { currentTier: 'PRO' } });
      const where: Prisma.UserWhereInput = { ...(tier ? { currentTier: tier } : {}) };
      const select = { currentTier: true };
      const body = { current_tier: user.currentTier };
      return { current_tier: user.currentTier };
      const limits = tierLimits(config, user.currentTier);
      db.$queryRaw\`SELECT current_tier FROM users WHERE current_tier <> 'FREE' FOR UPDATE\`;
      db.$executeRaw\`UPDATE users SET locale = 'x' WHERE current_tier = 'FREE'\`.length;
      db.$executeRaw\`UPDATE users_archive SET note = 'current_tier'\`;
      db.user.update({ where: { id }, data: { locale: pick({ current_tier: 1 }).x } });`;
    expect(tierWrites('reads.ts', reads)).toEqual([]);
  });

  it('no code outside BillingUsersRepository writes current_tier', () => {
    const offenders = srcFiles()
      .map((file) => ({ path: file.path, writes: tierWrites(file.path, file.text) }))
      .filter((file) => file.writes.length > 0);
    expect(offenders.map((file) => file.path)).toEqual([ALLOWED_WRITER]);
    expect(offenders[0].writes).toHaveLength(1);
  });

  it('only the tier service calls the setter, and only the webhook handler and the expiry job use the tier service', () => {
    const files = srcFiles();
    const naming = (name: string) =>
      files
        .filter((file) => mentions(file.path, file.text, name) > 0)
        .map((file) => file.path)
        .sort();
    expect(naming('setCurrentTier')).toEqual([ALLOWED_WRITER, TIER_SERVICE].sort());
    // Every way to reach the service (import, injection, moduleRef.get) names the class.
    expect(naming('BillingTierService')).toEqual(
      [...TIER_CALLERS, TIER_SERVICE, 'src/modules/billing/billing.module.ts'].sort(),
    );
    expect(
      mentions('sample.ts', `this.users['setCurrentTier'](tx, id, t); // setCurrentTier`, 'setCurrentTier'),
    ).toBe(1);
  });

  it('no request DTO accepts current_tier', () => {
    const sample = `import { IsString } from 'class-validator';
      export class PatchMeDto { @IsString() current_tier!: string; }
      export class MeResponseDto { @ApiProperty() current_tier!: string; }`;
    expect(acceptingDtoProps('sample.dto.ts', sample)).toEqual(['sample.dto.ts: PatchMeDto']);
    const dtoFiles = srcFiles().filter((file) => file.path.endsWith('.dto.ts'));
    expect(dtoFiles.length).toBeGreaterThan(0);
    const accepting = dtoFiles.flatMap((file) => acceptingDtoProps(file.path, file.text));
    expect(accepting).toEqual([]);
  });
});
