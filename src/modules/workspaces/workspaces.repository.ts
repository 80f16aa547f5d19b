import type { Db } from '../../infra/prisma/prisma.service.js';

/**
 * The one writer of `workspaces` (docs/architecture.md, "Table ownership"): the owned-resource kit's
 * OwnedRepository runs every query through this delegate, so no other file names it.
 */
export const workspaceRows = (db: Db) => db.workspace;
