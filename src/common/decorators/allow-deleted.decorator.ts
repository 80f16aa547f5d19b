import { SetMetadata } from '@nestjs/common';

export const ALLOW_DELETED = 'auth:allow-deleted';

/** Routes a soft-deleted user may still call (GET /me, export, restore); all others answer 403. */
export const AllowDeleted = () => SetMetadata(ALLOW_DELETED, true);
