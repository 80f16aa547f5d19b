import { AppError } from './app-error.js';

/**
 * Text that must not reach a failure record or an audit entry (operators and admins read them, exports
 * carry them): stack frames, file paths, SQL, Prisma's query dumps. Logs keep the full error.
 */
const INTERNAL = [
  /\n\s*at\s/, // a stack frame
  /^\s*at\s.+:\d+:\d+\)?\s*$/m,
  /file:\/\//,
  /(?:^|[\s("'`])\/(?:[\w.@-]+\/)+[\w.@-]+\.(?:[cm]?[jt]sx?|json|node|prisma)\b/,
  /[A-Za-z]:\\[\w\\.-]+/,
  /node_modules/,
  /\b(?:SELECT|INSERT\s+INTO|UPDATE|DELETE\s+FROM)\b[\s\S]*\b(?:FROM|VALUES|SET|WHERE|RETURNING)\b/,
  /`prisma\.|invocation in|Raw query failed|ConnectorError|DriverAdapterError/i,
];

export const looksInternal = (text: string): boolean => INTERNAL.some((pattern) => pattern.test(text));

/** An error whose message was written for operators (no internals): failure records may quote it. */
export class RecordableError extends Error {}

/**
 * What a failure record says about an error: the message of our own errors (AppError, RecordableError),
 * otherwise only the error's class and its database error code. Library and driver messages (Prisma,
 * pg) can quote SQL, schema names and file paths, so they stay in the logs.
 */
export function recordableError(err: unknown): string {
  if (err instanceof AppError || err instanceof RecordableError) {
    const text = `${err.name}: ${err.message}`;
    if (!looksInternal(text)) return text.slice(0, 2000);
  }
  const name = err instanceof Error && /^[A-Za-z][\w]{0,80}$/.test(err.name) ? err.name : 'Error';
  const code = (err as { code?: unknown } | null)?.code;
  const suffix = typeof code === 'string' && /^[A-Z0-9_]{1,12}$/.test(code) ? ` (${code})` : '';
  return `${name}${suffix}: internal error, see the logs`;
}
