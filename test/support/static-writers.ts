import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

/**
 * A static check that finds the places in TypeScript source that write a column or a table, so a test can
 * prove there is one writer. `ownershipProblems` (below) drives it from the "Table ownership" map in
 * docs/architecture.md for every table of prisma/schema.prisma (test/platform/table-ownership.spec.ts);
 * `findWrites` is the field-level part it uses for column groups. It reads the syntax tree, not the types: it is deliberately conservative
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

/* ---------------------------------------------------------------------------------------------------
 * Table ownership: every write to any table of prisma/schema.prisma, attributed to its table (and, for
 * a table split in column groups, to the columns it sets). Driven by the schema, so a new table or a
 * new relation is seen without touching this file.
 * ------------------------------------------------------------------------------------------------- */

export interface SchemaModel {
  model: string;
  /** The Prisma client property: `creditTransaction`. */
  delegate: string;
  table: string;
  /** Prisma field name → SQL column name (scalar fields only). */
  columns: Map<string, string>;
  /** Relation field name → table it points to. */
  relations: Map<string, string>;
}

/** Models, tables, columns and relations of a schema.prisma text. */
export function parseSchema(text: string): SchemaModel[] {
  const blocks = [...text.matchAll(/^model\s+(\w+)\s*\{([\s\S]*?)^\}/gm)];
  const tableOf = new Map(
    blocks.map(([, model, body]) => [model, /@@map\("([^"]+)"\)/.exec(body)?.[1] ?? model] as const),
  );
  return blocks.map(([, model, body]) => {
    const columns = new Map<string, string>();
    const relations = new Map<string, string>();
    for (const line of body.split('\n')) {
      const field = /^\s*(\w+)\s+(\w+)(\[\])?\??\s*(.*)$/.exec(line.replace(/\/\/.*$/, ''));
      if (!field || line.trim().startsWith('@@')) continue;
      const [, name, type, , rest] = field;
      if (tableOf.has(type)) relations.set(name, tableOf.get(type)!);
      else columns.set(name, /@map\("([^"]+)"\)/.exec(rest)?.[1] ?? name);
    }
    return {
      model,
      delegate: model[0].toLowerCase() + model.slice(1),
      table: tableOf.get(model)!,
      columns,
      relations,
    };
  });
}

export interface TableWrite {
  table: string;
  /** SQL columns the write sets; null when it cannot be told (a whole row, a delete, a variable). */
  columns: string[] | null;
  line: number;
  code: string;
}

const SQL_WRITE =
  /\b(INSERT\s+INTO|UPDATE(?:\s+ONLY)?|DELETE\s+FROM|TRUNCATE(?:\s+TABLE)?|MERGE\s+INTO|COPY)\s+(?:"?public"?\s*\.\s*)?"?(\w+)"?/gi;
/** Receivers a Prisma delegate is read from: a delegate taken from anything else is a row's relation. */
const CLIENTS = new Set(['tx', 'db', 'prisma', 'client', 'trx', 'database']);
const SQL_KEYWORDS = /^(SET|WHERE|FROM|RETURNING|AS|DEFAULT|VALUES|SELECT|ON|USING|\()$/i;

/** Column names of a comma list at depth 0 (`a = 1, "b" = f(x, y)` → a, b). */
function setListColumns(list: string): string[] {
  const columns: string[] = [];
  let depth = 0;
  let item = '';
  for (const ch of list + ',') {
    if (ch === '(') depth += 1;
    if (ch === ')') depth -= 1;
    if (ch === ',' && depth === 0) {
      const name = /^\s*"?(\w+)"?/.exec(item)?.[1];
      if (name) columns.push(name.toLowerCase());
      item = '';
    } else item += ch;
  }
  return columns;
}

/** Text up to the first unbalanced `)` or one of the stop words at depth 0. */
function clause(text: string, stop: RegExp): string {
  let depth = 0;
  for (let i = 0; i < text.length; i += 1) {
    if (text[i] === '(') depth += 1;
    if (text[i] === ')' && --depth < 0) return text.slice(0, i);
    if (depth === 0 && stop.test(text.slice(i, i + 12)) && /\W/.test(text[i - 1] ?? ' '))
      return text.slice(0, i);
  }
  return text;
}

/** Tables (and columns) a piece of SQL writes. */
export function sqlWrites(
  sql: string,
  tables: ReadonlySet<string>,
): { table: string; columns: string[] | null }[] {
  const found: { table: string; columns: string[] | null }[] = [];
  for (const match of sql.matchAll(SQL_WRITE)) {
    const table = match[2].toLowerCase();
    if (!tables.has(table)) continue;
    const verb = match[1].toUpperCase().split(/\s+/)[0];
    const after = sql.slice(match.index + match[0].length);
    let columns: string[] | null = null;
    if (verb === 'UPDATE') {
      const set = /^\s+(?:(?:AS\s+)?(?!SET\b)"?\w+"?\s+)?SET\b/i.exec(after);
      if (set) columns = setListColumns(clause(after.slice(set[0].length), /^(WHERE|FROM|RETURNING)\b/i));
    } else if (verb === 'INSERT') {
      const list = /^\s*(?:(?:AS\s+)?(?!VALUES\b|SELECT\b)"?\w+"?\s*)?\(([^)]*)\)/i.exec(after);
      if (list) {
        columns = setListColumns(list[1]);
        const upsert = /\bDO\s+UPDATE\s+SET\b/i.exec(after);
        if (upsert) {
          const extra = setListColumns(
            clause(after.slice(upsert.index + upsert[0].length), /^(WHERE|RETURNING)\b/i),
          );
          columns.push(...extra);
        }
      }
    }
    found.push({ table, columns: columns?.filter((c) => !SQL_KEYWORDS.test(c)) ?? null });
  }
  return found;
}

/** SQL text of a literal, a template (substitutions become `?`) or a `+` chain of them. */
function sqlText(node: ts.Node): string | null {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isTemplateExpression(node)) {
    return node.head.text + node.templateSpans.map((span) => ` ? ${span.literal.text}`).join('');
  }
  if (
    ts.isBinaryExpression(node) &&
    node.operatorToken.kind === ts.SyntaxKind.PlusToken &&
    !(ts.isBinaryExpression(node.parent) && node.parent.operatorToken.kind === ts.SyntaxKind.PlusToken)
  ) {
    return concatenatedText(node);
  }
  return null;
}

/** Keys set by a Prisma write argument, or null when one of them cannot be read off the source. */
function writtenFields(call: ts.CallExpression, method: string): string[] | null {
  if (method.startsWith('delete')) return null;
  const arg = call.arguments[0];
  if (!arg || !ts.isObjectLiteralExpression(arg)) return null;
  const fields: string[] = [];
  for (const prop of arg.properties) {
    const key =
      ts.isPropertyAssignment(prop) || ts.isShorthandPropertyAssignment(prop) ? nameOf(prop.name) : null;
    if (!key || !WRITE_KEYS.has(key)) {
      if (!key || !READ_KEYS.has(key)) if (!(key === 'skipDuplicates')) return null;
      continue;
    }
    if (!ts.isPropertyAssignment(prop) || !ts.isObjectLiteralExpression(prop.initializer)) return null;
    for (const inner of prop.initializer.properties) {
      const name =
        ts.isPropertyAssignment(inner) || ts.isShorthandPropertyAssignment(inner) ? nameOf(inner.name) : null;
      if (!name) return null;
      fields.push(name);
    }
  }
  return fields;
}

/** Every write in one source text to a table of the schema: Prisma delegates, nested writes, SQL. */
export function findTableWrites(
  fileName: string,
  text: string,
  models: readonly SchemaModel[],
): TableWrite[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const byDelegate = new Map(models.map((m) => [m.delegate, m]));
  const relationTargets = new Map<string, Set<string>>();
  for (const m of models) {
    for (const [name, table] of m.relations) {
      relationTargets.set(name, (relationTargets.get(name) ?? new Set()).add(table));
    }
  }
  const tables = new Set(models.map((m) => m.table));
  const found: TableWrite[] = [];
  const report = (node: ts.Node, table: string, columns: string[] | null) => {
    const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
    const code = node.getText().replace(/\s+/g, ' ').trim().slice(0, 100);
    const key = `${table}|${columns?.join(',')}|${line}`;
    if (!found.some((w) => `${w.table}|${w.columns?.join(',')}|${w.line}` === key)) {
      found.push({ table, columns, line, code });
    }
  };

  const visit = (node: ts.Node) => {
    // <client>.<delegate>.<method>(...) and delegates that escape into a variable or an argument.
    if (ts.isPropertyAccessExpression(node) || ts.isElementAccessExpression(node)) {
      const name = ts.isPropertyAccessExpression(node) ? node.name.text : nameOf(node.argumentExpression);
      const model = name ? byDelegate.get(name) : undefined;
      if (model) {
        const parent = node.parent;
        const method =
          (ts.isPropertyAccessExpression(parent) || ts.isElementAccessExpression(parent)) &&
          parent.expression === node
            ? ts.isPropertyAccessExpression(parent)
              ? parent.name.text
              : nameOf(parent.argumentExpression)
            : null;
        if (method !== null) {
          // `this.feedback.create(...)` calls a service or repository field, not a Prisma delegate.
          if (PRISMA_WRITES.has(method) && node.expression.kind !== ts.SyntaxKind.ThisKeyword) {
            const call = parent.parent;
            const fields = ts.isCallExpression(call) ? writtenFields(call, method) : null;
            report(node, model.table, fields && fields.map((f) => model.columns.get(f) ?? f));
          }
        } else {
          const receiver = node.expression;
          const receiverName = ts.isIdentifier(receiver)
            ? receiver.text
            : ts.isPropertyAccessExpression(receiver)
              ? receiver.name.text
              : null;
          if (receiverName && CLIENTS.has(receiverName)) report(node, model.table, null);
        }
      }
    }
    // Nested writes through a relation: `data: { creditTransactions: { create: ... } }`.
    if (ts.isPropertyAssignment(node) || ts.isShorthandPropertyAssignment(node)) {
      const targets = relationTargets.get(nameOf(node.name) ?? '');
      if (targets && contextOf(node).kind === 'write') {
        const value = ts.isPropertyAssignment(node) ? node.initializer : null;
        const onlyLinks =
          value &&
          ts.isObjectLiteralExpression(value) &&
          value.properties.every((p) => ['connect', 'disconnect'].includes(nameOf(p.name) ?? ''));
        if (!onlyLinks) for (const table of targets) report(node, table, null);
      }
    }
    const sql = sqlText(node);
    if (sql !== null) for (const write of sqlWrites(sql, tables)) report(node, write.table, write.columns);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found.sort((a, b) => a.line - b.line);
}

/* ---------------------------------------------------------------------------------------------------
 * The ownership map (docs/architecture.md, "Table ownership") and the check it drives.
 * ------------------------------------------------------------------------------------------------- */

export interface OwnerRow {
  table: string;
  /** SQL columns of a column group; null for the whole table (or "all others" of a split table). */
  columns: string[] | null;
  owner: string;
}

export interface Ownership {
  owners: OwnerRow[];
  /** Second writers waiting to move: table → files still allowed to write it. */
  pending: { table: string; file: string }[];
}

const cells = (line: string) =>
  line
    .trim()
    .replace(/^\||\|$/g, '')
    .split('|')
    .map((cell) => cell.trim().replace(/`/g, ''));

/** Reads the tables of the "Table ownership" section of a markdown text. */
export function parseOwnership(markdown: string): Ownership {
  const start = markdown.indexOf('\n## Table ownership');
  if (start < 0) throw new Error('docs/architecture.md has no "## Table ownership" section');
  const rest = markdown.slice(start + 1);
  const end = rest.indexOf('\n## ', 1);
  const section = end < 0 ? rest : rest.slice(0, end);
  const owners: OwnerRow[] = [];
  const pending: Ownership['pending'] = [];
  let header: string[] = [];
  for (const line of section.split('\n')) {
    if (!line.trim().startsWith('|')) {
      header = [];
      continue;
    }
    const row = cells(line);
    if (header.length === 0) {
      header = row.map((h) => h.toLowerCase());
      continue;
    }
    if (row.every((cell) => /^:?-+:?$/.test(cell))) continue;
    if (header[1] === 'columns') {
      const group = row[1] === '' || row[1] === 'all others' ? null : row[1].split(/\s*,\s*/);
      owners.push({ table: row[0], columns: group, owner: row[2] });
    } else if (header[1] === 'file') pending.push({ table: row[0], file: row[1] });
  }
  return { owners, pending };
}

export interface SourceFile {
  path: string;
  text: string;
}

/** The row a new table needs, as it should be pasted into the map. */
export const ownerRowFor = (table: string, owner: string) => `| \`${table}\` | | \`${owner}\` |`;

/**
 * Everything that breaks "one writer per table": writes by a file other than the owner, tables of the
 * schema without a row, rows for tables or columns the schema does not have, rows twice, owners that do
 * not exist, pending rows that are no longer needed. Each problem is one line saying what to change.
 */
export function ownershipProblems(
  files: readonly SourceFile[],
  models: readonly SchemaModel[],
  ownership: Ownership,
  exists: (path: string) => boolean = () => true,
): string[] {
  const problems: string[] = [];
  const modelOf = new Map(models.map((m) => [m.table, m]));
  const groupKey = (row: OwnerRow) => `${row.table}(${row.columns?.join(', ') ?? 'all'})`;
  const seen = new Set<string>();
  for (const row of ownership.owners) {
    const model = modelOf.get(row.table);
    if (!model)
      problems.push(`map row for "${row.table}": no such table in prisma/schema.prisma; remove the row`);
    const known = new Set(model?.columns.values());
    for (const column of row.columns ?? []) {
      if (model && !known.has(column)) problems.push(`map row for "${row.table}": no column "${column}"`);
    }
    if (seen.has(groupKey(row))) problems.push(`map row ${groupKey(row)} appears twice; keep one`);
    seen.add(groupKey(row));
    if (!exists(row.owner)) problems.push(`map row for "${row.table}": owner ${row.owner} does not exist`);
  }
  const writes = files.flatMap((file) =>
    findTableWrites(file.path, file.text, models).map((write) => ({ ...write, path: file.path })),
  );
  // Column groups: also every shape the field-level detector knows (a caller handing `{ currentTier }`
  // to a generic update, an assignment), for fields no other model has.
  for (const row of ownership.owners) {
    const model = modelOf.get(row.table);
    if (!model || !row.columns) continue;
    const elsewhere = new Set(models.filter((m) => m !== model).flatMap((m) => [...m.columns.keys()]));
    const fieldsOf = [...model.columns].filter(([, column]) => row.columns!.includes(column));
    const rules: WriteRules = {
      fields: new Set(
        fieldsOf.flatMap(([field, column]) => [field, column]).filter((f) => !elsewhere.has(f)),
      ),
      sql: row.columns.flatMap((column) => sqlWritesColumn(row.table, column)),
    };
    for (const file of files) {
      for (const hit of findWrites(file.path, file.text, rules)) {
        const [line, ...code] = hit.split(': ');
        writes.push({
          table: row.table,
          columns: row.columns,
          line: Number(line),
          code: code.join(': '),
          path: file.path,
        });
      }
    }
  }

  const rowsOf = (table: string) => ownership.owners.filter((row) => row.table === table);
  const groupOf = (table: string, column: string | null) =>
    rowsOf(table).find((row) => column !== null && row.columns?.includes(column)) ??
    rowsOf(table).find((row) => row.columns === null);
  const reported = new Set<string>();
  const usedPending = new Set<string>();
  for (const model of models) {
    if (rowsOf(model.table).length === 0) {
      const writers = [...new Set(writes.filter((w) => w.table === model.table).map((w) => w.path))];
      const owner = writers.length === 1 ? writers[0] : `src/modules/<feature>/<name>.repository.ts`;
      problems.push(
        `table "${model.table}" has no owner: add the row ${ownerRowFor(model.table, owner)} to the ` +
          `"Table ownership" section of docs/architecture.md`,
      );
    } else if (!rowsOf(model.table).some((row) => row.columns === null)) {
      problems.push(`table "${model.table}" has column groups but no "all others" row`);
    }
  }
  for (const write of writes) {
    if (rowsOf(write.table).length === 0) continue;
    // No column named (`data: {}`, `DELETE`): the write touches the row, which the "all others" owner holds.
    for (const column of write.columns?.length ? write.columns : [null]) {
      const row = groupOf(write.table, column);
      if (!row || row.owner === write.path) continue;
      const pending = ownership.pending.find((p) => p.table === write.table && p.file === write.path);
      if (pending && row.columns === null) {
        usedPending.add(`${pending.table}|${pending.file}`);
        continue;
      }
      const what = row.columns ? `${write.table} (${row.columns.join(', ')})` : write.table;
      const message =
        `${write.path}:${write.line} writes ${what}, whose one writer is ${row.owner}: move the write ` +
        `there (or change the map in docs/architecture.md) — ${write.code}`;
      const key = `${write.path}:${write.line} ${what}`;
      if (!reported.has(key)) problems.push(message);
      reported.add(key);
    }
  }
  for (const pending of ownership.pending) {
    if (!usedPending.has(`${pending.table}|${pending.file}`)) {
      problems.push(
        `${pending.file} no longer writes ${pending.table}: delete its row from "Second writers waiting to ` +
          `move" in docs/architecture.md`,
      );
    }
  }
  return problems;
}
