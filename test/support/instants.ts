import { expect } from '@jest/globals';
import type { Response } from 'supertest';

/**
 * Strict ISO 8601 forms that JavaScript's Date cannot read (`Date.parse` is NaN): week, ordinal and basic
 * dates, an hour alone, a basic time, a decimal comma, an offset without minutes. class-validator's
 * IsISO8601 passes them all; they became Invalid Dates and a 500.
 */
export const ISO_FORMS_DATE_CANNOT_READ = [
  '2026-W01',
  '2026-W01-1',
  '2026-123',
  '20260101',
  '2026-01-01T10',
  '2026-01-01T1000',
  '2026-01-01T10:00,5',
  '2026-01-01T10:00:00+01',
] as const;

/** The documented 400 validation problem, its one error naming `field` as a date-time to fix. */
export function expectUnreadableInstant(res: Response, field: string): void {
  expect({ status: res.status, type: res.headers['content-type'], code: res.body?.code }).toEqual({
    status: 400,
    type: expect.stringMatching(/^application\/problem\+json/),
    code: 'validation_failed',
  });
  const leaf = field.split('.').pop();
  expect(res.body.errors).toEqual([
    { field, message: `${leaf} must be a date-time such as 2026-01-01T00:00:00Z` },
  ]);
}
