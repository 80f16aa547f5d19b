import { applyDecorators, type Type } from '@nestjs/common';
import {
  ApiConflictResponse,
  ApiExtraModels,
  ApiNotFoundResponse,
  ApiOkResponse,
  getSchemaPath,
} from '@nestjs/swagger';

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
  ApiConflictResponse({
    description: `limit_reached: the caller holds as many ${plural} as their plan allows; delete one or upgrade`,
  });

export const ApiOwnedNotFound = () =>
  ApiNotFoundResponse({ description: 'No such id, malformed id, or a row of another user (same answer)' });
