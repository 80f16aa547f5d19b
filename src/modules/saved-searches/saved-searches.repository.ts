import type { Db } from '../../infra/prisma/prisma.service.js';

/**
 * The one writer of `saved_searches` (docs/architecture.md, "Table ownership"): the owned-resource kit's
 * OwnedRepository runs every query through this delegate, so no other file names it.
 */
export const savedSearchRows = (db: Db) => db.savedSearch;
