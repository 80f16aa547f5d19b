import { applyDecorators, SetMetadata } from '@nestjs/common';
import { ApiExtension } from '@nestjs/swagger';

export const ALLOW_DELETED = 'auth:allow-deleted';

/** Marks the operation for the document builder (app/openapi.ts), which removes the mark. */
export const ALLOW_DELETED_EXTENSION = 'x-allow-deleted';

/**
 * Routes a soft-deleted user may still call (GET /me, export, restore); all other authenticated routes
 * answer 403 `account_deleted`, which the document builder adds to their OpenAPI description.
 */
export const AllowDeleted = () =>
  applyDecorators(SetMetadata(ALLOW_DELETED, true), ApiExtension(ALLOW_DELETED_EXTENSION, true));
