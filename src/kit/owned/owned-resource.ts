import type { TierLimits } from '../../config/project.config.js';
import type { Db } from '../../infra/prisma/prisma.service.js';
import type { OwnedDelegate, OwnedRow } from './owned.repository.js';

/** Tier limits that cap how many rows of a resource a user may hold. */
export type OwnedLimitKey = Extract<keyof TierLimits, 'savedSearches' | 'workspaces' | 'apiKeys'>;

/**
 * Everything that makes one owned resource different from another. A new owned resource is a Prisma
 * model with `user_id` + `(user_id, created_at)` index, a DTO pair, one of these and a few lines of wiring.
 */
export interface OwnedResourceDefinition<Row extends OwnedRow, CreateDto, UpdateDto, Response> {
  /** resource_type of its audit entries and prefix of their actions (`saved_search` -> `saved_search.created`). */
  type: string;
  /** Human names used in error details ("saved search", "saved searches"). */
  label: string;
  plural: string;
  /** The Prisma model delegate, on the root client or inside a transaction. */
  table: (db: Db) => OwnedDelegate<Row>;
  /**
   * The model's table in SQL (`@@map`), for the statements sent as plain SQL (the count, the create). Its
   * columns are the model's fields in snake_case, as every owned model maps them.
   */
  sqlTable: string;
  /** The tier limit enforced on create; none when omitted. */
  limit?: OwnedLimitKey;
  /**
   * Which of the user's rows count against the limit, as a condition in SQL on the resource's table (a
   * constant of the code; default: all of them). It runs under the owner's lock in the create statement.
   */
  limitSql?: string;
  /** Model fields of a new row; never the owner (taken from the principal). */
  toCreate: (dto: CreateDto) => Record<string, unknown>;
  /**
   * Model fields of a PATCH: only the supplied ones (undefined values are left alone by Prisma). Omit it
   * for a resource without PATCH.
   */
  toUpdate?: (dto: UpdateDto) => Record<string, unknown>;
  /** The snake_case wire shape. */
  toResponse: (row: Row) => Response;
}

export const defineOwnedResource = <Row extends OwnedRow, CreateDto, UpdateDto, Response>(
  definition: OwnedResourceDefinition<Row, CreateDto, UpdateDto, Response>,
) => definition;
