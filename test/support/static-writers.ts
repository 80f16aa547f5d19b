import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

/**
 * A static check that finds the places in TypeScript source that write a column or a table, so a test can
 * prove there is one writer. It reads the syntax tree, not the types: it is deliberately conservative
 * (a Prisma delegate that escapes into a variable counts as a write) and each spec that uses it also
 * proves on samples that it detects every shape it claims to.
 */
export interface WriteRules {
  /** Prisma field and SQL column names whose value must not be set outside the allowed writer. */
  fields: ReadonlySet<string>;
  /** Prisma delegates (e.g. `creditTransaction`) of which every use but a read call counts as a write. */
  models?: ReadonlySet<string>;
  /** SQL (string or template text) that writes. */
  sql: readonly RegExp[];
}

/** Keys of Prisma arguments that carry values to write (create/update/upsert and nested writes). */
const WRITE_KEYS = new Set(['data', 'create', 'update', 'upsert', 'connectOrCreate', 'set']);
/** Keys of Prisma arguments that only read or filter. */
const READ_KEYS = new Set([
  'where',
  'select',
  'include',
  'omit',
  'orderBy',
  'cursor',
  'distinct',
  'by',
  'having',
  '_count',
  '_sum',
  '_avg',
  '_min',
  '_max',
]);
const PRISMA_WRITES = new Set([
  'create',
  'createMany',
  'createManyAndReturn',
  'update',
  'updateMany',
  'updateManyAndReturn',
  'upsert',
  'delete',
  'deleteMany',
]);
const PRISMA_READS = new Set([
  'findUnique',
  'findUniqueOrThrow',
  'findFirst',
  'findFirstOrThrow',
  'findMany',
  'count',
  'aggregate',
  'groupBy',
]);
const READ_TYPE = /(WhereInput|WhereUniqueInput|Select|Include|OrderByWithRelationInput|Omit)\b/;

/** `"public"."users"`, `public.users`, `users`, with an optional alias (`users AS u`, `users u`). */
export const sqlTable = (name: string): string =>
  `(?:"?public"?\\s*\\.\\s*)?"?${name}"?(?![\\w$])(?:\\s+(?:AS\\s+)?(?!SET\\b|WHERE\\b|FROM\\b)"?\\w+"?)?`;

/** SQL that sets `column` of `table`: in an UPDATE's SET list, an INSERT's column list or an upsert's DO UPDATE. */
export function sqlWritesColumn(table: string, column: string): RegExp[] {
  const t = sqlTable(table);
  // The SET list ends at WHERE / FROM / RETURNING: a column named only in a filter is not written.
  const setList = `SET\\b(?:(?!\\b(?:WHERE|FROM|RETURNING)\\b)[\\s\\S])*"?\\b${column}\\b`;
  return [
    new RegExp(`\\bUPDATE\\s+(?:ONLY\\s+)?${t}\\s+${setList}`, 'i'),
    new RegExp(`\\bINSERT\\s+INTO\\s+${t}\\s*\\([^)]*\\b${column}\\b`, 'i'),
    new RegExp(`\\bINSERT\\s+INTO\\s+${t}[\\s\\S]*\\bDO\\s+UPDATE\\s+${setList}`, 'i'),
  ];
}

export function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'generated' ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') && entry.name !== 'metadata.ts' ? [path] : [];
  });
}

export const nameOf = (name: ts.Node | undefined): string | null =>
  name &&
  (ts.isIdentifier(name) ||
    ts.isPrivateIdentifier(name) ||
    ts.isStringLiteral(name) ||
    ts.isNoSubstitutionTemplateLiteral(name))
    ? name.text
    : null;

type Context = { kind: 'write' | 'read' | 'other' } | { kind: 'variable'; name: string };

/** Expressions a value passes through unchanged on its way into an argument. */
function isWrapper(node: ts.Node, child: ts.Node): boolean {
  if (
    ts.isObjectLiteralExpression(node) ||
    ts.isArrayLiteralExpression(node) ||
    ts.isSpreadAssignment(node) ||
    ts.isSpreadElement(node) ||
    ts.isParenthesizedExpression(node) ||
    ts.isAsExpression(node) ||
    ts.isSatisfiesExpression(node) ||
    ts.isTypeAssertionExpression(node) ||
    ts.isNonNullExpression(node)
  ) {
    return true;
  }
  if (ts.isConditionalExpression(node)) return child !== node.condition;
  if (ts.isBinaryExpression(node)) {
    const op = node.operatorToken.kind;
    return (
      op === ts.SyntaxKind.QuestionQuestionToken ||
      op === ts.SyntaxKind.BarBarToken ||
      op === ts.SyntaxKind.AmpersandAmpersandToken
    );
  }
  return false;
}

const calleeMethod = (call: ts.CallExpression): string | null => {
  const callee = call.expression;
  if (ts.isPropertyAccessExpression(callee)) return callee.name.text;
  if (ts.isElementAccessExpression(callee)) return nameOf(callee.argumentExpression);
  return null;
};

/** Where a value ends up: in a Prisma write argument, a read argument, a variable, or elsewhere. */
function contextOf(start: ts.Node): Context {
  let child: ts.Node = start;
  for (let at = start.parent; at; child = at, at = at.parent) {
    if ((ts.isPropertyAssignment(at) || ts.isShorthandPropertyAssignment(at)) && at !== start) {
      const key = nameOf(at.name) ?? '';
      if (WRITE_KEYS.has(key)) return { kind: 'write' };
      if (READ_KEYS.has(key)) return { kind: 'read' };
      continue;
    }
    if (ts.isPropertyAssignment(at) || ts.isShorthandPropertyAssignment(at)) continue;
    if (ts.isVariableDeclaration(at)) {
      const name = nameOf(at.name);
      if (!name || READ_KEYS.has(name) || (at.type && READ_TYPE.test(at.type.getText()))) {
        return { kind: name ? 'read' : 'other' };
      }
      return { kind: 'variable', name };
    }
    if (ts.isBinaryExpression(at) && at.operatorToken.kind === ts.SyntaxKind.EqualsToken) {
      const name = ts.isIdentifier(at.left) ? at.left.text : null;
      return name && child === at.right ? { kind: 'variable', name } : { kind: 'other' };
    }
    if (ts.isCallExpression(at)) {
      const isArgument = at.arguments.some((arg) => arg === child);
      return { kind: isArgument && PRISMA_WRITES.has(calleeMethod(at) ?? '') ? 'write' : 'other' };
    }
    if (!isWrapper(at, child)) return { kind: 'other' };
  }
  return { kind: 'other' };
}

/** Concatenated text of `'a' + 'b' + \`c\`` chains, so SQL split across literals is still seen. */
function concatenatedText(node: ts.BinaryExpression): string {
  const parts: string[] = [];
  const walk = (n: ts.Node) => {
    if (ts.isBinaryExpression(n) && n.operatorToken.kind === ts.SyntaxKind.PlusToken) {
      walk(n.left);
      walk(n.right);
    } else if (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) parts.push(n.text);
    else parts.push(' ? ');
  };
  walk(node);
  return parts.join('');
}

/** Places in one source text that write what the rules name, as `line: code`. */
export function findWrites(fileName: string, text: string, rules: WriteRules): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found = new Map<number, string>();
  const report = (node: ts.Node) => {
    const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
    const key = node.getStart();
    if (!found.has(key)) found.set(key, `${line}: ${node.getText().split('\n')[0].trim()}`);
  };
  /** Variables holding an object literal that sets a field: a write only if the variable reaches one. */
  const held = new Map<string, ts.Node[]>();
  const references: ts.Identifier[] = [];

  const visit = (node: ts.Node) => {
    if (
      (ts.isPropertyAssignment(node) || ts.isShorthandPropertyAssignment(node)) &&
      rules.fields.has(nameOf(node.name) ?? '')
    ) {
      const context = contextOf(node);
      if (context.kind === 'write') report(node);
      if (context.kind === 'variable') held.set(context.name, [...(held.get(context.name) ?? []), node]);
    }
    if (
      ts.isBinaryExpression(node) &&
      node.operatorToken.kind >= ts.SyntaxKind.FirstAssignment &&
      node.operatorToken.kind <= ts.SyntaxKind.LastAssignment
    ) {
      const target = node.left;
      const property = ts.isPropertyAccessExpression(target)
        ? target.name.text
        : ts.isElementAccessExpression(target)
          ? nameOf(target.argumentExpression)
          : null;
      if (property && rules.fields.has(property)) report(node);
    }
    if (rules.models && (ts.isPropertyAccessExpression(node) || ts.isElementAccessExpression(node))) {
      const model = ts.isPropertyAccessExpression(node) ? node.name.text : nameOf(node.argumentExpression);
      if (model && rules.models.has(model)) {
        // Only `<db>.<model>.<read>(...)` is harmless; a write call or an escaping delegate counts.
        const parent = node.parent;
        const method =
          ts.isPropertyAccessExpression(parent) && parent.expression === node ? parent.name.text : null;
        const called =
          method !== null && ts.isCallExpression(parent.parent) && parent.parent.expression === parent;
        if (!(called && PRISMA_READS.has(method))) report(node);
      }
    }
    if (ts.isIdentifier(node)) references.push(node);
    if (
      ts.isTemplateExpression(node) ||
      ts.isNoSubstitutionTemplateLiteral(node) ||
      ts.isStringLiteral(node)
    ) {
      if (rules.sql.some((re) => re.test(node.getText()))) report(node);
    }
    if (
      ts.isBinaryExpression(node) &&
      node.operatorToken.kind === ts.SyntaxKind.PlusToken &&
      !(ts.isBinaryExpression(node.parent) && node.parent.operatorToken.kind === ts.SyntaxKind.PlusToken)
    ) {
      if (rules.sql.some((re) => re.test(concatenatedText(node)))) report(node);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);

  for (const ref of references) {
    const writes = held.get(ref.text);
    if (!writes) continue;
    // The declaration's own name is not a use.
    if (ts.isVariableDeclaration(ref.parent) && ref.parent.name === ref) continue;
    if (contextOf(ref).kind === 'write') writes.forEach(report);
  }
  return [...found.entries()].sort(([a], [b]) => a - b).map(([, line]) => line);
}

/** How often a source text names `name` as an identifier, a property or a string (comments do not count). */
export function mentions(fileName: string, text: string, name: string): number {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  let count = 0;
  const visit = (node: ts.Node) => {
    if ((ts.isIdentifier(node) || ts.isStringLiteral(node)) && node.text === name) count += 1;
    ts.forEachChild(node, visit);
  };
  visit(source);
  return count;
}
