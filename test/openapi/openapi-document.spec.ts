/**
 * openapi.json is a product: the committed file is exactly what the code produces (`npm run openapi`
 * regenerates it and the client's schema), and the document follows the conventions a frontend relies on.
 * No database or Redis: the application is built in preview mode.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, Module, type Type } from '@nestjs/common';
import { GUARDS_METADATA, METHOD_METADATA } from '@nestjs/common/constants.js';
import { MetadataScanner, ModulesContainer, NestFactory } from '@nestjs/core';
import { ApiNotFoundResponse, type OpenAPIObject } from '@nestjs/swagger';
import { getMetadataStorage } from 'class-validator';
import { ApiModule } from '../../src/app/api.module.js';
import { createOpenApiDocument } from '../../src/app/openapi.js';
import { generateOpenApiDocument, openApiText } from '../../src/app/openapi-generate.js';
import { ALLOW_DELETED } from '../../src/common/decorators/allow-deleted.decorator.js';
import { IS_PUBLIC } from '../../src/common/decorators/public.decorator.js';
import { REFUSE_API_KEYS } from '../../src/common/decorators/refuse-api-keys.decorator.js';
import { ERROR_CODES, isErrorCodeOf } from '../../src/common/errors/error-codes.js';
import { AdminGuard } from '../../src/modules/auth/admin.guard.js';
import { loadConfig } from '../../src/config/env.js';
// @ts-expect-error -- a plain .mjs script shared with `npm run openapi` (no type declarations)
import { clientSchemaText } from '../../scripts/openapi-client.mjs';

const ROOT = join(import.meta.dirname, '..', '..');
const PROBES = ['get /health', 'get /health/ready', 'get /status'];
const REGENERATE = 'out of date: run `npm run openapi` and commit the result';

type Operation = {
  operationId?: string;
  summary?: string;
  security?: unknown[];
  responses: Record<
    string,
    {
      description?: string;
      content?: Record<string, { schema?: { $ref?: string } }>;
      headers?: object;
      'x-problem-codes'?: string[];
    }
  >;
  parameters?: { name: string; in: string; schema?: { format?: string } }[];
  requestBody?: { content?: Record<string, unknown> };
};

/**
 * What the authentication guard reads for each handler (handler first, then its controller), keyed by the
 * document's operationId (`<Controller>_<method>`), from the module graph of a preview application.
 */
type GuardFlags = { isPublic: boolean; allowDeleted: boolean; refuseApiKeys: boolean; admin: boolean };

async function guardFlags(): Promise<Map<string, GuardFlags>> {
  const app = await NestFactory.create(ApiModule.forRoot(loadConfig({ APP_ENV: 'development' })), {
    preview: true,
    logger: false,
    abortOnError: false,
  });
  try {
    const flags = new Map<string, GuardFlags>();
    const scanner = new MetadataScanner();
    for (const module of app.get(ModulesContainer).values()) {
      for (const wrapper of module.controllers.values()) {
        const controller = wrapper.metatype as Type | null;
        if (!controller) continue;
        for (const name of scanner.getAllMethodNames(controller.prototype)) {
          const handler = controller.prototype[name] as object;
          if (Reflect.getMetadata(METHOD_METADATA, handler) === undefined) continue;
          const flag = (key: string) =>
            Boolean(Reflect.getMetadata(key, handler) ?? Reflect.getMetadata(key, controller));
          const guards = [
            ...((Reflect.getMetadata(GUARDS_METADATA, handler) as unknown[] | undefined) ?? []),
            ...((Reflect.getMetadata(GUARDS_METADATA, controller) as unknown[] | undefined) ?? []),
          ];
          flags.set(`${controller.name}_${name}`, {
            isPublic: flag(IS_PUBLIC),
            allowDeleted: flag(ALLOW_DELETED),
            refuseApiKeys: flag(REFUSE_API_KEYS),
            admin: guards.includes(AdminGuard),
          });
        }
      }
    }
    return flags;
  } finally {
    await app.close();
  }
}

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

  it('gives every operation a summary and a client error, except the probes', () => {
    expect(operations.filter(([, op]) => !op.summary?.trim()).map(([key]) => key)).toEqual([]);
    const without4xx = operations
      .filter(([, op]) => !Object.keys(op.responses).some((status) => status.startsWith('4')))
      .map(([key]) => key);
    // The probes read neither their query nor a body and are not rate limited: they refuse nothing
    // (SPEC: /status is "Always 200"; the readiness report's 503 is its own JSON).
    expect(without4xx.sort()).toEqual(['get /health', 'get /health/ready', 'get /status']);
  });

  it('documents what the HTTP layer refuses, code by code, on every operation it refuses it on', () => {
    // Answered before any route runs (common/http/body-limits.ts, Express's routing), so a route's own
    // decorators do not name them: the document builder merges them into each operation's entries.
    const names = (op: Operation, status: string, code: string) =>
      new RegExp(`\\b${code}\\b`).test(op.responses[status]?.description ?? '');
    const missing = (pick: (key: string, op: Operation) => boolean, status: string, code: string) =>
      operations.filter(([key, op]) => pick(key, op) && !names(op, status, code)).map(([key]) => key);
    const webhook = (key: string) => key.startsWith('post /webhooks/');
    const json = (key: string, op: Operation) =>
      !webhook(key) && op.requestBody?.content?.['application/json'] !== undefined;
    const body = (key: string, op: Operation) => op.requestBody !== undefined || webhook(key);
    const pathParam = (_: string, op: Operation) => (op.parameters ?? []).some((p) => p.in === 'path');
    expect(operations.filter(([key, op]) => json(key, op)).length).toBeGreaterThan(15);
    // A query string whose percent-escapes are not UTF-8: everywhere but the webhook receivers (no query).
    const probe = (key: string) => ['get /health', 'get /health/ready', 'get /status'].includes(key);
    expect(missing((key) => !webhook(key) && !probe(key), '400', 'validation_failed')).toEqual([]);
    // A path segment whose escapes do not decode: the query's code (neither echoes the input).
    expect(missing(pathParam, '400', 'validation_failed')).toEqual([]);
    // A JSON body: not JSON (bad_request) besides invalid fields (validation_failed); too big; not UTF-8.
    expect(missing(json, '400', 'bad_request')).toEqual([]);
    expect(missing(body, '413', 'payload_too_large')).toEqual([]);
    expect(missing(json, '415', 'unsupported_media_type')).toEqual([]);
    // The one-click unsubscribe and the confirmation read a form, as bytes: no media type or charset refused.
    for (const key of ['post /api/v1/email/unsubscribe', 'post /api/v1/email/confirm'])
      expect({ key, body: operations.find(([k]) => k === key)![1].requestBody?.content }).toEqual({
        key,
        body: expect.objectContaining({ 'application/x-www-form-urlencoded': expect.anything() }),
      });
    const op = (key: string) => operations.find(([k]) => k === key)![1];
    expect(op('post /api/v1/email/confirm').responses['415']).toBeUndefined();
    expect(op('post /api/v1/email/unsubscribe').responses['415']).toBeUndefined();
    expect(op('post /webhooks/billing').responses['415']).toBeUndefined();
    // Nothing is added twice: one entry per status, each code named once.
    const twice = operations.flatMap(([key, o]) =>
      Object.entries(o.responses)
        .filter(([, r]) => /(\bbad_request\b.*){2}|(\bpayload_too_large\b.*){2}/s.test(r.description ?? ''))
        .map(([status]) => `${key} ${status}`),
    );
    expect(twice).toEqual([]);
  });

  it("documents each route's own refusals that the fuzz audit found undocumented", () => {
    const described = (key: string, status: string) =>
      operations.find(([k]) => k === key)![1].responses[status]?.description ?? '';
    for (const key of ['post /api/v1/saved_searches', 'post /api/v1/workspaces', 'post /api/v1/api_keys'])
      expect({ key, conflict: described(key, '409') }).toEqual({
        key,
        conflict: expect.stringMatching(/^limit_reached: /),
      });
    expect(described('post /webhooks/identity', '503')).toMatch(/^webhook_not_configured: /);
    expect(described('post /webhooks/email', '503')).toMatch(/^webhook_not_configured: /);
    expect(described('post /webhooks/billing', '503')).toMatch(/^billing_not_configured: /);
    // The suppression list's one rule for an address in the path: 400 when no entry can have it, else 404.
    expect(described('delete /api/v1/admin/email/suppressions/{email}', '400')).toMatch(
      /^validation_failed: .*320.*@/,
    );
    expect(described('delete /api/v1/admin/email/suppressions/{email}', '404')).toMatch(/^not_found: /);
  });

  it('answers every error with the one ProblemDetails schema as application/problem+json', () => {
    const other = operations.flatMap(([key, op]) =>
      Object.entries(op.responses)
        .filter(([status]) => /^[45]/.test(status))
        // Readiness answers its report with the 503 (a monitor reads which check failed).
        .filter(([status]) => !(key === 'get /health/ready' && status === '503'))
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
    const notReady = operations.find(([key]) => key === 'get /health/ready')![1].responses['503'];
    expect(notReady.content).toEqual({
      'application/json': { schema: { $ref: '#/components/schemas/ReadinessReportDto' } },
    });
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

  it('documents the 403 account_deleted on every authenticated route but the @AllowDeleted ones', async () => {
    // After DELETE /api/v1/account/me the authentication guard answers 403 account_deleted everywhere
    // except on @AllowDeleted() routes and public ones; one 403 entry names every code a route answers.
    const flags = await guardFlags();
    const routes = operations.map(([key, op]) => ({ key, op, flags: flags.get(op.operationId ?? '') }));
    expect(routes.filter((r) => !r.flags).map((r) => r.key)).toEqual([]);
    // The document's security follows @Public(), so a client sees which routes need the token.
    expect(
      routes.filter((r) => r.flags!.isPublic !== (r.op.security!.length === 0)).map((r) => r.key),
    ).toEqual([]);
    const allowed = routes.filter((r) => r.flags!.allowDeleted).map((r) => r.key);
    expect(allowed).toEqual(
      expect.arrayContaining([
        'get /api/v1/me',
        'get /api/v1/account/me/export',
        'post /api/v1/account/me/restore',
      ]),
    );
    const codes = (op: Operation) => op.responses['403']?.description?.match(/account_deleted/g) ?? [];
    const refusing = routes.filter((r) => !r.flags!.isPublic && !r.flags!.allowDeleted);
    expect(refusing.length).toBeGreaterThan(40);
    expect(refusing.filter((r) => codes(r.op).length !== 1).map((r) => r.key)).toEqual([]);
    expect(routes.filter((r) => !refusing.includes(r) && codes(r.op).length > 0).map((r) => r.key)).toEqual(
      [],
    );
    // Merged with what the route already documents, not replacing it.
    const forbidden = (key: string) =>
      operations.find(([k]) => k === key)![1].responses['403'].description ?? '';
    expect(forbidden('get /api/v1/admin/users')).toMatch(
      /admin_required.*api_key_not_allowed.*account_deleted/s,
    );
    expect(forbidden('post /api/v1/billing/checkout')).toMatch(/api_key_not_allowed.*account_deleted/);
    expect(forbidden('get /api/v1/account/me/export')).not.toContain('account_deleted');
    expect(forbidden('get /api/v1/account/me/export')).toContain('api_key_not_allowed');
  });

  it('names the codes of every error response, each registered under its status in ERROR_CODES', () => {
    // A frontend reads which `code` values a route can answer from here: an error response that names none
    // (a bare "No or invalid Bearer token", an owned resource's 404) left it guessing.
    const errors = operations.flatMap(([key, op]) =>
      Object.entries(op.responses)
        .filter(([status]) => /^[45]/.test(status))
        // Readiness answers its report with the 503 (a monitor reads which check failed), not a problem.
        .filter(([status]) => !(key === 'get /health/ready' && status === '503'))
        .map(([status, response]) => ({ where: `${key} ${status}`, status, response })),
    );
    expect(errors.length).toBeGreaterThan(250);
    // The description is `code: when; code: when`, one segment per code in x-problem-codes, in its order.
    const named = (description: string) => description.split('; ').map((part) => part.split(':')[0]);
    const unnamed = errors
      .filter(({ response }) => {
        const listed = response['x-problem-codes'] ?? [];
        return listed.length === 0 || named(response.description ?? '').join() !== listed.join();
      })
      .map(({ where, response }) => `${where}: ${response.description}`);
    expect(unnamed).toEqual([]);
    const unregistered = errors.flatMap(({ where, status, response }) =>
      named(response.description ?? '')
        .filter((code) => !isErrorCodeOf(Number(status), code))
        .map((code) => `${where}: ${code}`),
    );
    expect(unregistered).toEqual([]);
  });

  it('names only codes the source answers with: every registered code is thrown or answered in src', () => {
    // ERROR_CODES is the one list the error classes take a code from (the compiler holds every throw to it);
    // a code in it that no source file names could only be documented, never answered.
    const sources = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
        entry.isDirectory()
          ? entry.name === 'generated'
            ? []
            : sources(join(dir, entry.name))
          : entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts')
            ? [join(dir, entry.name)]
            : [],
      );
    const registry = join(ROOT, 'src', 'common', 'errors', 'error-codes.ts');
    // Neither the registry itself nor the documentation counts (ApiErrors names codes as unquoted keys).
    const documentation = [
      registry,
      join(ROOT, 'src', 'app', 'openapi.ts'),
      join(ROOT, 'src', 'metadata.ts'),
    ];
    const answering = sources(join(ROOT, 'src'))
      .filter((file) => !documentation.includes(file) && !file.includes(join('src', 'common', 'openapi')))
      .map((file) => readFileSync(file, 'utf8'))
      .join('\n');
    const unanswered = Object.entries(ERROR_CODES).flatMap(([status, codes]) =>
      (codes as readonly string[])
        .filter((code) => !answering.includes(`'${code}'`))
        .map((code) => `${status} ${code}`),
    );
    expect({ unanswered, files: relative(ROOT, registry) }).toEqual({
      unanswered: [],
      files: 'src/common/errors/error-codes.ts',
    });
  });

  it('documents the refusals of the guards on every route they guard', async () => {
    const flags = await guardFlags();
    const codes = (op: Operation, status: string) => op.responses[status]?.['x-problem-codes'] ?? [];
    const routes = operations.map(([key, op]) => ({ key, op, flags: flags.get(op.operationId ?? '')! }));
    const missing = (pick: (f: GuardFlags) => boolean, status: string, code: string) =>
      routes.filter((r) => pick(r.flags) && !codes(r.op, status).includes(code)).map((r) => r.key);
    const secured = (f: GuardFlags) => !f.isPublic;
    // The authentication guard's 401s and its 503s (the key set, the database it reads the user from).
    for (const code of [
      'unauthenticated',
      'invalid_token',
      'token_expired',
      'unknown_user',
      'invalid_api_key',
    ])
      expect({ code, missing: missing(secured, '401', code) }).toEqual({ code, missing: [] });
    for (const code of ['identity_unavailable', 'dependency_unavailable'])
      expect({ code, missing: missing(secured, '503', code) }).toEqual({ code, missing: [] });
    // A public route answers none of them: its credential is a signature or a signed link, if any.
    expect(
      routes
        .filter((r) => r.flags.isPublic)
        .filter(
          (r) =>
            codes(r.op, '401').some((c) => c !== 'invalid_signature') ||
            codes(r.op, '503').includes('identity_unavailable'),
        )
        .map((r) => r.key),
    ).toEqual([]);
    // @RefuseApiKeys() and the admin allowlist.
    const refusing = routes.filter((r) => r.flags.refuseApiKeys).map((r) => r.key);
    expect(refusing.length).toBeGreaterThanOrEqual(9);
    expect(missing((f) => f.refuseApiKeys, '403', 'api_key_not_allowed')).toEqual([]);
    expect(routes.filter((r) => r.flags.admin).length).toBeGreaterThan(10);
    expect(missing((f) => f.admin, '403', 'admin_required')).toEqual([]);
    expect(missing((f) => f.admin, '403', 'api_key_not_allowed')).toEqual([]);
    expect(
      routes.filter((r) => !r.flags.admin && codes(r.op, '403').includes('admin_required')).map((r) => r.key),
    ).toEqual([]);
  });

  it('refuses to build a document with an error response that names no code', async () => {
    @Controller('undocumented')
    class UndocumentedController {
      @Get()
      @ApiNotFoundResponse({ description: 'No such thing' })
      get() {
        return {};
      }
    }
    @Module({ controllers: [UndocumentedController] })
    class UndocumentedModule {}
    const app = await NestFactory.create(UndocumentedModule, { preview: true, logger: false });
    try {
      await expect(createOpenApiDocument(app)).rejects.toThrow(
        /GET \/undocumented documents a 404 without its codes/,
      );
    } finally {
      await app.close();
    }
  });

  it('documents the Idempotency-Key, the webhook signature headers and uuid path ids', () => {
    const headerNames = (key: string) =>
      (operations.find(([k]) => k === key)![1].parameters ?? [])
        .filter((p) => p.in === 'header')
        .map((p) => p.name);
    expect(headerNames('post /api/v1/ai/completions')).toContain('Idempotency-Key');
    expect(headerNames('post /api/v1/admin/broadcasts')).toEqual(['Idempotency-Key']);
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

  it('puts every length limit the validators enforce into the schema, as maxLength', () => {
    // The Swagger plugin copies @MaxLength only when its argument is a literal, and knows nothing of
    // @MaxCodePoints: a limit held in a constant was in the server and missing from the contract.
    const schemas = document.components!.schemas as Record<
      string,
      { properties?: Record<string, { maxLength?: number }> }
    >;
    const storage = getMetadataStorage() as unknown as {
      validationMetadatas: Map<
        { name: string },
        { name?: string; propertyName: string; constraints?: unknown[]; each?: boolean }[]
      >;
    };
    const limits: { where: string; enforced: number; documented: number | undefined }[] = [];
    for (const [target, metadatas] of storage.validationMetadatas) {
      const schema = schemas[target.name];
      if (!schema) continue;
      for (const meta of metadatas) {
        const max =
          meta.name === 'maxLength' || meta.name === 'maxCodePoints'
            ? meta.constraints?.[0]
            : meta.name === 'isLength'
              ? meta.constraints?.[1]
              : undefined;
        if (typeof max !== 'number' || meta.each) continue;
        limits.push({
          where: `${target.name}.${meta.propertyName}`,
          enforced: max,
          documented: schema.properties?.[meta.propertyName]?.maxLength,
        });
      }
    }
    expect(limits.length).toBeGreaterThan(20);
    expect(limits.filter((l) => l.documented !== l.enforced)).toEqual([]);
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
