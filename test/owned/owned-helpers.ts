import { expect } from '@jest/globals';
import type { Response } from 'supertest';
import type { ApiApp } from '../support/test-env.js';

export const NIL_UUID = '00000000-0000-0000-0000-000000000000';
export const MISSING_UUID = '6f1c1f0e-8a53-4c9b-9d1e-3b5c2a7e4d10';

/** Ids that are not UUIDs: each must answer exactly like a missing row (404), never 500. */
export const MALFORMED_IDS = [
  'nope',
  '123',
  `${MISSING_UUID}0`,
  MISSING_UUID.replace(/-/g, ''),
  `{${MISSING_UUID}}`,
  "1' OR '1'='1",
  'g0000000-0000-0000-0000-000000000000',
  '%20',
];

export const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A problem+json answer with this status (and code, when given). */
export function expectProblem(res: Response, status: number, code?: string): void {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ status, ...(code ? { code } : {}) });
}

/** The body of a 404 minus the per-request id: identical for missing, foreign and malformed ids. */
export const notFoundBody = (res: Response) => {
  expect(res.status).toBe(404);
  const { request_id: _requestId, ...rest } = res.body as Record<string, unknown>;
  return rest;
};

export { type CapturedQuery, captureSql } from '../support/sql-capture.js';

/** Creates the user (through a first authenticated request) and moves it to a tier, e.g. for its limits. */
export async function userOnTier(api: ApiApp, sub: string, tier: string, email?: string): Promise<string> {
  const authorization = await api.bearer(sub, email);
  expect((await api.http.get('/api/v1/saved_searches').set('Authorization', authorization)).status).toBe(200);
  await api.prisma.user.update({ where: { identityUserId: sub }, data: { currentTier: tier } });
  return authorization;
}
