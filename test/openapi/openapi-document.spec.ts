/**
 * openapi.json is a product: the committed file is exactly what the code produces (`npm run openapi`
 * regenerates it and the client's schema), and the document follows the conventions a frontend relies on.
 * No database or Redis: the application is built in preview mode.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from '@jest/globals';
import type { OpenAPIObject } from '@nestjs/swagger';
import { generateOpenApiDocument, openApiText } from '../../src/app/openapi-generate.js';
// @ts-expect-error -- a plain .mjs script shared with `npm run openapi` (no type declarations)
import { clientSchemaText } from '../../scripts/openapi-client.mjs';

const ROOT = join(import.meta.dirname, '..', '..');
const PROBES = ['get /health', 'get /health/ready', 'get /status'];
const REGENERATE = 'out of date: run `npm run openapi` and commit the result';

type Operation = {
  summary?: string;
  security?: unknown[];
  responses: Record<string, { content?: Record<string, { schema?: { $ref?: string } }>; headers?: object }>;
  parameters?: { name: string; in: string; schema?: { format?: string } }[];
};

describe('openapi.json', () => {
  let document: OpenAPIObject;
  let operations: [string, Operation][];

  beforeAll(async () => {
    document = await generateOpenApiDocument();
    operations = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.entries(item).map(
        ([method, op]) => [`${method} ${path}`, op as Operation] as [string, Operation],
      ),
    );
  });

  it('is the committed file (and the typed client the committed schema)', async () => {
    const committed = readFileSync(join(ROOT, 'openapi.json'), 'utf8');
    expect({ file: 'openapi.json', upToDate: committed === openApiText(document) }).toEqual({
      file: 'openapi.json',
      upToDate: true,
    });
    const schema = readFileSync(join(ROOT, 'clients', 'typescript', 'src', 'schema.ts'), 'utf8');
    expect({
      file: 'clients/typescript/src/schema.ts',
      note: REGENERATE,
      upToDate: schema === (await clientSchemaText(document)),
    }).toEqual({
      file: 'clients/typescript/src/schema.ts',
      note: REGENERATE,
      upToDate: true,
    });
  });

  it('is OpenAPI 3.1 and tells how to get a token locally', () => {
    expect(document.openapi).toBe('3.1.0');
    const bearer = document.components?.securitySchemes?.bearer as { description?: string };
    expect(bearer.description).toContain('npm run -s dev:token');
  });

  it('gives every operation a summary, and every one but the probes a client error', () => {
    expect(operations.filter(([, op]) => !op.summary?.trim()).map(([key]) => key)).toEqual([]);
    const without4xx = operations
      .filter(([, op]) => !Object.keys(op.responses).some((status) => status.startsWith('4')))
      .map(([key]) => key);
    expect(without4xx.sort()).toEqual([...PROBES].sort());
  });

  it('answers every error with the one ProblemDetails schema as application/problem+json', () => {
    const other = operations.flatMap(([key, op]) =>
      Object.entries(op.responses)
        .filter(([status]) => /^[45]/.test(status))
        .filter(([, response]) => {
          const content = response.content ?? {};
          return (
            Object.keys(content).join() !== 'application/problem+json' ||
            content['application/problem+json'].schema?.$ref !== '#/components/schemas/ProblemDetails'
          );
        })
        .map(([status]) => `${key} ${status}`),
    );
    expect(other).toEqual([]);
    const problem = document.components!.schemas!.ProblemDetails as { properties: Record<string, unknown> };
    expect(Object.keys(problem.properties)).toEqual(
      expect.arrayContaining(['type', 'title', 'status', 'detail', 'code', 'request_id', 'errors']),
    );
  });

  it('marks public routes with security: [] and documents the rate-limit headers of every 429', () => {
    // Every operation states its security; the public ones are the spec's unauthenticated surface
    // (test/security/api9 holds the exact list).
    expect(operations.filter(([, op]) => op.security === undefined).map(([key]) => key)).toEqual([]);
    const publicOps = operations.filter(([, op]) => op.security!.length === 0).map(([key]) => key);
    expect(publicOps).toEqual(expect.arrayContaining([...PROBES, 'post /webhooks/billing']));
    expect(
      publicOps.filter(
        (key) =>
          !/^(get|post) (\/health|\/status$|\/webhooks\/|\/api\/v1\/email\/(unsubscribe|confirm)$)/.test(key),
      ),
    ).toEqual([]);
    const limited = operations.filter(([, op]) => op.responses['429']);
    expect(limited.length).toBeGreaterThan(30);
    for (const [key, op] of limited) {
      expect({ key, headers: Object.keys(op.responses['429'].headers ?? {}).sort() }).toEqual({
        key,
        headers: ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After'],
      });
    }
  });

  it('documents the Idempotency-Key, the webhook signature headers and uuid path ids', () => {
    const headerNames = (key: string) =>
      (operations.find(([k]) => k === key)![1].parameters ?? [])
        .filter((p) => p.in === 'header')
        .map((p) => p.name);
    expect(headerNames('post /api/v1/ai/completions')).toContain('Idempotency-Key');
    expect(headerNames('post /webhooks/billing')).toEqual(['Paddle-Signature']);
    expect(headerNames('post /webhooks/identity')).toEqual([
      'webhook-id',
      'webhook-timestamp',
      'webhook-signature',
    ]);
    const ids = operations.flatMap(([key, op]) =>
      (op.parameters ?? [])
        .filter((p) => p.in === 'path')
        .map((p) => [key, p.name === 'email' ? 'email' : 'uuid', p.schema?.format]),
    );
    expect(ids.length).toBeGreaterThan(5);
    // Path ids are uuids; the suppression list is keyed by the address itself.
    expect(ids.filter(([, wanted, format]) => format !== wanted)).toEqual([]);
    const untyped = operations.flatMap(([key, op]) =>
      (op.parameters ?? [])
        .filter(
          (p) => !['string', 'integer', 'boolean'].includes((p.schema as { type?: string })?.type ?? ''),
        )
        .map((p) => `${key} ${p.in} ${p.name}`),
    );
    expect(untyped).toEqual([]);
  });

  it('types what TypeScript cannot say: date-times, uuids, integers and enums', () => {
    const schemas = document.components!.schemas as Record<
      string,
      { properties?: Record<string, Record<string, unknown>> }
    >;
    const me = schemas.MeResponseDto.properties!;
    expect(me.id).toMatchObject({ format: 'uuid' });
    expect(me.email).toMatchObject({ format: 'email' });
    expect(me.created_at).toMatchObject({ format: 'date-time' });
    expect(me.deleted_at).toMatchObject({ type: ['string', 'null'], format: 'date-time' });
    expect(me.credit_balance).toMatchObject({ type: 'integer' });
    expect(me.current_tier).toMatchObject({ enum: ['FREE', 'PRO', 'TEAM'] });
    expect(schemas.CreditTransactionDto.properties!.kind.enum).toEqual(
      expect.arrayContaining(['grant', 'spend', 'refund', 'settle']),
    );
    expect(schemas.SubscriptionResponseDto.properties!.status.enum).toContain('PAST_DUE');
    expect(schemas.LastBroadcastDto.properties!.template_key.enum).toContain('newsletter');
    // No property is a bare `number` without a reason: rates and ratios are the only fractions.
    const numbers = Object.entries(schemas).flatMap(([name, schema]) =>
      Object.entries(schema.properties ?? {})
        .filter(([, p]) => p.type === 'number' || (Array.isArray(p.type) && p.type.includes('number')))
        .map(([property]) => `${name}.${property}`),
    );
    expect(numbers.filter((n) => !/(rate|ratio|share)$/.test(n))).toEqual([]);
  });
});
