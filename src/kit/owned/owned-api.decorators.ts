import { applyDecorators, type Type } from '@nestjs/common';
import { ApiExtraModels, ApiNotFoundResponse, ApiOkResponse, getSchemaPath } from '@nestjs/swagger';

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

export const ApiOwnedNotFound = () =>
  ApiNotFoundResponse({ description: 'No such id, malformed id, or a row of another user (same answer)' });
