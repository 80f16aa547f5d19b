import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

// Spec rule 3: current_tier is server-controlled; only billing webhook processing and the expiry job
// change it. Both go through BillingUsersRepository.setCurrentTier, the single allowed writer.

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ALLOWED_WRITER = 'src/modules/billing/billing-users.repository.ts';
const TIER_NAMES = new Set(['currentTier', 'current_tier']);
/** Prisma write arguments: `data` (create/update/updateMany/createMany), `create`/`update` (upsert). */
const WRITE_KEYS = new Set(['data', 'create', 'update']);
const SQL_WRITE = [
  /\bUPDATE\s+"?users"?\s+SET\b[\s\S]*\bcurrent_tier\b/i,
  /\bINSERT\s+INTO\s+"?users"?\s*\([^)]*\bcurrent_tier\b/i,
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'generated' ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') && entry.name !== 'metadata.ts' ? [path] : [];
  });
}

const nameOf = (name: ts.PropertyName | ts.Expression): string | null =>
  ts.isIdentifier(name) || ts.isStringLiteral(name) || ts.isNoSubstitutionTemplateLiteral(name)
    ? name.text
    : null;

/** Places in one source text that write current_tier, as `line: code`. */
function tierWrites(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const report = (node: ts.Node) => {
    const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
    found.push(`${line}: ${node.getText().split('\n')[0].trim()}`);
  };
  const insideWriteArgument = (node: ts.Node): boolean => {
    for (let at: ts.Node | undefined = node.parent; at; at = at.parent) {
      if (ts.isPropertyAssignment(at) && WRITE_KEYS.has(nameOf(at.name) ?? '')) return true;
      if (ts.isCallExpression(at) || ts.isFunctionLike(at)) return false;
    }
    return false;
  };
  const visit = (node: ts.Node) => {
    if (
      (ts.isPropertyAssignment(node) || ts.isShorthandPropertyAssignment(node)) &&
      TIER_NAMES.has(nameOf(node.name) ?? '')
    ) {
      if (insideWriteArgument(node)) report(node);
    }
    if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.EqualsToken) {
      const target = node.left;
      const property = ts.isPropertyAccessExpression(target)
        ? target.name.text
        : ts.isElementAccessExpression(target)
          ? nameOf(target.argumentExpression)
          : null;
      if (property && TIER_NAMES.has(property)) report(node);
    }
    if (
      ts.isTemplateExpression(node) ||
      ts.isNoSubstitutionTemplateLiteral(node) ||
      ts.isStringLiteral(node)
    ) {
      if (SQL_WRITE.some((re) => re.test(node.getText()))) report(node);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

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
    const sample = `
      db.user.update({ where: { id }, data: { currentTier: 'PRO' } });
      db.user.upsert({ where: { id }, create: { id, currentTier }, update: { currentTier: tier } });
      user.currentTier = 'TEAM';
      db.$executeRaw\`UPDATE users SET locale = 'x', current_tier = \${t} WHERE id = \${id}\`;
      db.$executeRaw\`INSERT INTO users (id, current_tier) VALUES (\${id}, 'PRO')\`;`;
    expect(tierWrites('sample.ts', sample)).toHaveLength(6);
    const reads = `
      db.user.findMany({ where: { currentTier: { in: tiers } }, select: { currentTier: true } });
      db.user.count({ where: { currentTier: 'PRO' } });
      const body = { current_tier: user.currentTier };
      db.$queryRaw\`SELECT current_tier FROM users WHERE current_tier <> 'FREE'\`;
      db.user.update({ where: { id }, data: { locale: pick({ current_tier: 1 }).x } });`;
    expect(tierWrites('reads.ts', reads)).toEqual([]);
  });

  it('no code outside BillingUsersRepository writes current_tier', () => {
    const offenders = sourceFiles(join(ROOT, 'src'))
      .map((path) => ({ path: relative(ROOT, path), writes: tierWrites(path, readFileSync(path, 'utf8')) }))
      .filter((file) => file.writes.length > 0);
    expect(offenders.map((file) => file.path)).toEqual([ALLOWED_WRITER]);
    expect(offenders[0].writes).toHaveLength(1);
  });

  it('no request DTO accepts current_tier', () => {
    const sample = `import { IsString } from 'class-validator';
      export class PatchMeDto { @IsString() current_tier!: string; }
      export class MeResponseDto { @ApiProperty() current_tier!: string; }`;
    expect(acceptingDtoProps('sample.dto.ts', sample)).toEqual(['sample.dto.ts: PatchMeDto']);
    const dtoFiles = sourceFiles(join(ROOT, 'src')).filter((path) => path.endsWith('.dto.ts'));
    expect(dtoFiles.length).toBeGreaterThan(0);
    const accepting = dtoFiles.flatMap((path) =>
      acceptingDtoProps(relative(ROOT, path), readFileSync(path, 'utf8')),
    );
    expect(accepting).toEqual([]);
  });
});
