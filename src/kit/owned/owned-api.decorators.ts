import { applyDecorators, type Type } from '@nestjs/common';
import { ApiExtraModels, ApiOkResponse, getSchemaPath } from '@nestjs/swagger';
import { ApiErrors } from '../../common/openapi/api-errors.decorator.js';

/** Documents the `{items, total, page, page_size}` list response of an owned resource. */
export const ApiOwnedPageResponse = (item: Type<unknown>) =>
  applyDecorators(
    ApiExtraModels(item),
    ApiOkResponse({
      description: "The caller's rows, newest first",
      schema: {
        type: 'object',
        required: ['items', 'total', 'page', 'page_size'],
        properties: {
          items: { type: 'array', items: { $ref: getSchemaPath(item) } },
          total: { type: 'integer', description: "All of the caller's rows" },
          page: { type: 'integer', minimum: 1 },
          page_size: { type: 'integer', minimum: 1, maximum: 200 },
        },
      },
    }),
  );

/** The create route's 409 when the caller's tier limit for the resource is reached (OwnedResourceService). */
export const ApiOwnedLimitReached = (plural: string) =>
  ApiErrors({
    409: { limit_reached: `the caller holds as many ${plural} as their plan allows (delete one or upgrade)` },
  });

/** Missing, malformed and other users' ids alike (OwnedResourceService.notFound: spec rule 1, never 403). */
export const ApiOwnedNotFound = () =>
  ApiErrors({ 404: { not_found: 'no such id, a malformed id, or a row of another user (the same answer)' } });
