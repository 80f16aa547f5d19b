import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { mentions, nameOf, sourceFiles } from '../support/static-writers.js';

// Spec rule 3: current_tier is server-controlled; only billing webhook processing and the expiry job
// change it. Both go through BillingTierService.recompute, which alone calls
// BillingUsersRepository.setCurrentTier. That BillingUsersRepository is the one writer of the column is
// checked by test/platform/table-ownership.spec.ts (the users column group in docs/architecture.md,
// "Table ownership"); this spec checks who may reach the writer and that no request can set it.

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ALLOWED_WRITER = 'src/modules/billing/subscriptions/billing-users.repository.ts';
const TIER_SERVICE = 'src/modules/billing/subscriptions/billing-tier.service.ts';
const TIER_CALLERS = [
  // transaction.completed of a renewal applies a tier change that its period end made due.
  'src/modules/billing/payments/payments.service.ts',
  'src/modules/billing/jobs/subscription-expiry.service.ts',
  'src/modules/billing/subscriptions/subscription-state.service.ts',
];
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

describe('users.current_tier is reached only through the tier path', () => {
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
