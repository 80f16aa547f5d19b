import { ValidationError } from '../../../common/errors/app-error.js';
import { buildProblem, type ProblemDocument } from '../../../common/filters/problem-details.filter.js';

/** C0 controls, DEL and C1 controls: no queue name, job id, status or number holds one. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

const decoded = (text: string): string | null => {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
};

/**
 * The input bull-board mishandles, refused before it sees it (400 `validation_failed`, quoting none of it):
 * - a path segment whose percent-escapes do not decode to UTF-8 (`%ff`, a lone `%`): Express's param decoding
 *   failed inside bull-board, a 400 keyed INTERNAL_SERVER_ERROR that quoted the segment;
 * - a query name or value that does not decode twice: the page encodes queue names twice, so bull-board
 *   decodes `activeQueue` and `queueName` once more (`activeQueue=email%25` was a 500 "URI malformed");
 * - a control character in either, after those decodings: bull-board's validation messages carry their
 *   options after a NUL (`status=%00` was a 500 "Unterminated string in JSON").
 * Queue names, job ids, statuses and page numbers hold none of these, so nothing the page sends is refused.
 */
export function dashboardInputRefusal(url: string): ValidationError | null {
  const at = url.indexOf('?');
  const path = at === -1 ? url : url.slice(0, at);
  for (const segment of path.split('/')) {
    const text = decoded(segment);
    if (text === null)
      return new ValidationError('The path holds a "%" that is not the percent-escape of UTF-8 text.');
    if (CONTROL.test(text)) return new ValidationError('The path holds a control character.');
  }
  if (at === -1) return null;
  for (const pair of url.slice(at + 1).split('&')) {
    for (const part of pair.split('=')) {
      const once = decoded(part.replaceAll('+', ' '));
      const twice = once === null ? null : decoded(once);
      if (once === null || twice === null)
        return new ValidationError(
          'The query string holds a "%" that is not the percent-escape of UTF-8 text, once decoded (the dashboard decodes queue names twice).',
        );
      if (CONTROL.test(once) || CONTROL.test(twice))
        return new ValidationError('The query string holds a control character.');
    }
  }
  return null;
}

/** bull-board's error body: `{ error: { key, options? }, message?, code? }`. */
interface BoardError {
  error: { key: string; options?: Record<string, unknown> } | string;
}

export const isBoardError = (body: unknown): body is BoardError =>
  typeof body === 'object' &&
  body !== null &&
  'error' in body &&
  (typeof body.error === 'string' ||
    (typeof body.error === 'object' &&
      body.error !== null &&
      'key' in body.error &&
      typeof body.error.key === 'string'));

/**
 * Keys whose options are the dashboard's own words (a schema field name, a job's state read from Redis): kept
 * for the page's message. Every other key's options are dropped: STATUS_NOT_RETRIABLE and
 * INVALID_GRANULARITY, for instance, put the caller's text there.
 */
const OWN_OPTIONS: Record<string, string[]> = {
  'ERRORS.INVALID_QUERY_PARAM': ['field'],
  'ERRORS.JOB_NOT_RETRIABLE': ['state'],
};

/**
 * English text for the keys a request through the gate can meet (reads, retry, promote, pause, resume);
 * `{{name}}` is one of the kept options. bull-board's page shows its own translation of the key.
 */
const DETAILS: Record<string, string> = {
  'ERRORS.QUEUE_NOT_FOUND': 'No queue has this name.',
  'ERRORS.JOB_NOT_FOUND': 'The queue holds no job with this id.',
  'ERRORS.JOB_SCHEDULER_NOT_FOUND': 'The queue has no job scheduler with this id.',
  'ERRORS.JOB_NOT_RETRIABLE': 'The job is {{state}}: only a failed or completed job can be retried.',
  'ERRORS.STATUS_NOT_RETRIABLE': 'Only failed or completed jobs can be retried.',
  'ERRORS.INVALID_QUERY_PARAM': 'The "{{field}}" query parameter is not valid.',
  'ERRORS.INVALID_DATE_RANGE': 'from and to must be numbers, to not before from.',
  'ERRORS.INVALID_GRANULARITY': 'The granularity is not one the dashboard knows.',
  'ERRORS.INVALID_METRIC': 'The metric is not one the dashboard knows.',
  'ERRORS.QUEUE_READ_ONLY': 'The queue is read-only.',
  'ERRORS.REDIS_STATS_UNAVAILABLE': "Redis details are not available for this queue's backend.",
  'ERRORS.WORKERS_DISABLED': 'Worker reporting is disabled.',
  'ERRORS.FORBIDDEN': 'The dashboard does not allow this.',
  'ERRORS.INTERNAL_SERVER_ERROR': 'An unexpected error occurred.',
};

const REFUSED = 'The queue dashboard refused this request.';

/** bull-board's key as a code: `ERRORS.JOB_NOT_FOUND` is `job_not_found`; its 500 is the API's `internal_error`. */
export const boardCode = (key: string): string =>
  key === 'ERRORS.INTERNAL_SERVER_ERROR'
    ? 'internal_error'
    : key
        .replace(/^ERRORS\./, '')
        .toLowerCase()
        .replace(/[^a-z0-9_]/g, '_');

/**
 * An error bull-board answered itself, as problem+json: its status, its key as `code` and as `error.key`
 * (the page's toast reads `error`, translated in the admin's language), an English `detail`, and none of
 * the request's text (bull-board's `message` and the options it fills from the request are dropped).
 */
export function boardProblem(
  status: number,
  body: BoardError,
  requestId: string | undefined,
): ProblemDocument {
  const key = typeof body.error === 'string' ? 'ERRORS.INTERNAL_SERVER_ERROR' : body.error.key;
  const given = typeof body.error === 'string' ? {} : (body.error.options ?? {});
  const options = Object.fromEntries(
    (OWN_OPTIONS[key] ?? [])
      .filter((name) => ['string', 'number'].includes(typeof given[name]))
      .map((name) => [name, given[name]]),
  );
  const template = DETAILS[key] ?? REFUSED;
  const names = [...template.matchAll(/\{\{(\w+)\}\}/g)].map(([, name]) => name);
  const detail = names.every((name) => name in options)
    ? template.replace(/\{\{(\w+)\}\}/g, (_, name: string) => String(options[name]))
    : REFUSED;
  return buildProblem(status >= 400 && status <= 599 ? status : 500, detail, requestId, {
    code: boardCode(key),
    extensions: { error: Object.keys(options).length > 0 ? { key, options } : { key } },
  });
}
