import { expect } from '@jest/globals';
import { type INestApplication, RequestMethod, type Type } from '@nestjs/common';
import {
  GUARDS_METADATA,
  METHOD_METADATA,
  PATH_METADATA,
  ROUTE_ARGS_METADATA,
} from '@nestjs/common/constants.js';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum.js';
import { MetadataScanner, ModulesContainer } from '@nestjs/core';
import { getMetadataStorage } from 'class-validator';
import { ALLOW_DELETED } from '../../../src/common/decorators/allow-deleted.decorator.js';
import { IS_PUBLIC } from '../../../src/common/decorators/public.decorator.js';
import { REFUSE_API_KEYS } from '../../../src/common/decorators/refuse-api-keys.decorator.js';
import { AdminGuard } from '../../../src/modules/auth/admin.guard.js';

export type HttpMethod = 'get' | 'post' | 'patch' | 'put' | 'delete';

/** A route as the application declares it (Nest metadata), resolved to the path Express serves. */
export interface DeclaredRoute {
  /** `get /api/v1/saved_searches/:id` */
  key: string;
  method: HttpMethod;
  path: string;
  controller: Type;
  handler: string;
  isPublic: boolean;
  /** AdminGuard on the controller or the handler. */
  adminOnly: boolean;
  allowDeleted: boolean;
  /** @RefuseApiKeys(): the authentication guard answers an API key 403 `api_key_not_allowed`. */
  refusesApiKeys: boolean;
  /** The DTO class of `@Body()`, when the route takes one. */
  bodyDto: Type | null;
  /** The DTO class of `@Query()` (the whole query object), when the route takes one. */
  queryDto: Type | null;
  /** Single query parameters read with `@Query('name')`. */
  queryParams: string[];
  /** Path parameters (`:id`). */
  params: string[];
  /** Reads the raw request (`@Req()`): webhook receivers verify the exact bytes. */
  rawRequest: boolean;
}

/**
 * Every route the running application serves, read from the Express router (the ground truth of what
 * answers), minus Nest's middleware mounts (layers bound to every HTTP method) and the Swagger UI.
 */
export function servedRoutes(app: INestApplication): string[] {
  const express = app.getHttpAdapter().getInstance() as {
    router: { stack: { route?: { path: string; methods: Record<string, boolean> } }[] };
  };
  const keys = new Set<string>();
  for (const layer of express.router.stack) {
    if (!layer.route) continue;
    const methods = Object.keys(layer.route.methods).filter((m) => m !== '_all');
    // Middleware registered for "all methods" shows up as a route carrying every verb.
    if (methods.length > 5) continue;
    for (const method of methods) keys.add(`${method} ${layer.route.path}`);
  }
  return [...keys].sort();
}

/** Swagger UI and the OpenAPI document: served outside production only, not API routes. */
export const isDocsRoute = (key: string) => /^get \/docs(\/|-|$)/.test(key);

const joinPath = (...parts: string[]) =>
  parts
    .flatMap((p) => p.split('/'))
    .filter((p) => p.length > 0)
    .join('/');

/** Every controller route with what it takes and how it is guarded, from Nest's metadata. */
export function declaredRoutes(app: INestApplication): DeclaredRoute[] {
  const served = new Set(servedRoutes(app));
  const scanner = new MetadataScanner();
  const routes: DeclaredRoute[] = [];
  for (const module of app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const controller = wrapper.metatype as Type | null;
      if (!controller) continue;
      const prefix = String(Reflect.getMetadata(PATH_METADATA, controller) ?? '');
      for (const name of scanner.getAllMethodNames(controller.prototype)) {
        const handler = controller.prototype[name] as object;
        const ownPath = Reflect.getMetadata(PATH_METADATA, handler) as string | undefined;
        if (ownPath === undefined) continue;
        const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as number].toLowerCase();
        const bare = joinPath(prefix, ownPath);
        const candidates = [`/api/v1/${bare}`.replace(/\/$/, ''), `/${bare}`];
        const path = candidates.find((p) => served.has(`${method} ${p}`));
        if (!path) throw new Error(`${controller.name}.${name} (${method} ${bare}) is not served`);
        routes.push(describeRoute(controller, name, handler, method as HttpMethod, path));
      }
    }
  }
  return routes.sort((a, b) => a.key.localeCompare(b.key));
}

function describeRoute(
  controller: Type,
  name: string,
  handler: object,
  method: HttpMethod,
  path: string,
): DeclaredRoute {
  const args = (Reflect.getMetadata(ROUTE_ARGS_METADATA, controller, name) ?? {}) as Record<
    string,
    { index: number; data?: unknown }
  >;
  const types = (Reflect.getMetadata('design:paramtypes', controller.prototype, name) ?? []) as Type[];
  const byKind = (kind: RouteParamtypes) =>
    Object.entries(args)
      .filter(([key]) => key.split(':')[0] === String(kind))
      .map(([, arg]) => arg);
  const whole = (kind: RouteParamtypes) => {
    const arg = byKind(kind).find((a) => a.data === undefined);
    return arg ? types[arg.index] : null;
  };
  const guards = [
    ...((Reflect.getMetadata(GUARDS_METADATA, controller) ?? []) as unknown[]),
    ...((Reflect.getMetadata(GUARDS_METADATA, handler) ?? []) as unknown[]),
  ];
  const flag = (key: string) =>
    Boolean(Reflect.getMetadata(key, handler) ?? Reflect.getMetadata(key, controller));
  return {
    key: `${method} ${path}`,
    method,
    path,
    controller,
    handler: name,
    isPublic: flag(IS_PUBLIC),
    adminOnly: guards.includes(AdminGuard),
    allowDeleted: flag(ALLOW_DELETED),
    refusesApiKeys: flag(REFUSE_API_KEYS),
    bodyDto: whole(RouteParamtypes.BODY),
    queryDto: whole(RouteParamtypes.QUERY),
    queryParams: byKind(RouteParamtypes.QUERY)
      .filter((a) => typeof a.data === 'string')
      .map((a) => a.data as string),
    params: [...path.matchAll(/:(\w+)/g)].map((m) => m[1]),
    rawRequest: byKind(RouteParamtypes.REQUEST).length > 0 && whole(RouteParamtypes.BODY) === null,
  };
}

/** Property names a DTO class accepts (class-validator metadata; the global pipe refuses all others). */
export function dtoProperties(dto: Type): string[] {
  const metas = getMetadataStorage().getTargetValidationMetadatas(dto, '', true, false);
  return [...new Set(metas.map((m) => m.propertyName))].sort();
}

/** Fills `:id`-style parameters. */
export const pathWith = (path: string, params: Record<string, string | undefined>) =>
  path.replace(/:(\w+)/g, (_m, name: string) => {
    // An address parameter (the suppression list) takes any well-formed address when none is given.
    if (name === 'email' && params[name] === undefined) return encodeURIComponent('nobody@example.com');
    if (params[name] === undefined) throw new Error(`no value for :${name} in ${path}`);
    return encodeURIComponent(params[name]!);
  });

/**
 * Fails when the application serves a route the table does not list, or the table lists one the
 * application does not serve: a new route cannot ship without its security cases.
 */
export function expectCovers(app: INestApplication, table: readonly string[], what = 'route table'): void {
  const declared = declaredRoutes(app).map((r) => r.key);
  expect({ what, missing: declared.filter((k) => !table.includes(k)) }).toEqual({ what, missing: [] });
  expect({ what, unknown: table.filter((k) => !declared.includes(k)) }).toEqual({ what, unknown: [] });
}

/** DTO properties validated as nested DTOs (`@ValidateNested()`), e.g. a broadcast's `audience`. */
export function nestedDtoProperties(dto: Type): string[] {
  const metas = getMetadataStorage().getTargetValidationMetadatas(dto, '', true, false);
  return [...new Set(metas.filter((m) => m.type === 'nestedValidation').map((m) => m.propertyName))].sort();
}
