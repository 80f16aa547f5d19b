import { Injectable } from '@nestjs/common';
import { ForbiddenError, ValidationError } from '../../common/errors/app-error.js';
import type { ApiKey } from '../../generated/prisma/client.js';
import { generateApiKey } from '../auth/api-key.util.js';
import type { Principal } from '../../common/principal.js';
import { defineOwnedResource } from '../../kit/owned/owned-resource.js';
import { OwnedResourceService } from '../../kit/owned/owned-resource.service.js';
import { apiKeyRows } from './api-keys.repository.js';
import type { ApiKeyDto, CreateApiKeyDto, CreatedApiKeyDto } from './dto/api-key.dto.js';

export const toApiKeyResponse = (row: ApiKey): ApiKeyDto => ({
  id: row.id,
  user_id: row.userId,
  name: row.name,
  prefix: row.prefix,
  created_at: row.createdAt,
  updated_at: row.updatedAt,
  last_used_at: row.lastUsedAt,
  expires_at: row.expiresAt,
  revoked_at: row.revokedAt,
});

/** The fields of a new key that come from the request. */
const newKeyFields = (dto: CreateApiKeyDto): { name: string; expiresAt: Date | null } => ({
  name: dto.name,
  expiresAt: expiresAt(dto),
});

function expiresAt(dto: CreateApiKeyDto): Date | null {
  if (dto.expires_at === undefined || dto.expires_at === null) return null;
  const at = new Date(dto.expires_at); // a valid Date: OptionalInstant refused any other
  if (at.getTime() <= Date.now()) {
    const message = 'expires_at must be a date-time in the future';
    throw new ValidationError(message, [{ field: 'expires_at', message }]);
  }
  return at;
}

/**
 * API keys on the owned-resource pattern. Differences: the secret is generated here and shown once (only
 * its SHA-256 is stored), DELETE revokes instead of deleting (the row stays listed as revoked), there is no
 * PATCH, and only active keys count against the tier limit. Authentication with a key lives in
 * modules/auth (ApiKeyAuthService).
 */
@Injectable()
export class ApiKeysService extends OwnedResourceService<ApiKey, CreateApiKeyDto, never, ApiKeyDto> {
  protected readonly resource = defineOwnedResource({
    type: 'api_key',
    label: 'API key',
    plural: 'active API keys',
    table: apiKeyRows,
    sqlTable: 'api_keys',
    limit: 'apiKeys',
    limitSql: '"revoked_at" IS NULL AND ("expires_at" IS NULL OR "expires_at" > now())',
    toCreate: newKeyFields,
    toResponse: toApiKeyResponse,
  });

  override async create(principal: Principal, dto: CreateApiKeyDto): Promise<CreatedApiKeyDto> {
    this.refuseApiKeyPrincipal(principal);
    const data = newKeyFields(dto);
    const { key, prefix, secretHash } = generateApiKey();
    const row = await this.insert(
      principal,
      { ...data, prefix, secretHash },
      { prefix, expires_at: data.expiresAt?.toISOString() ?? null },
    );
    return { ...toApiKeyResponse(row), secret: key };
  }

  /**
   * DELETE revokes: one conditional UPDATE, so a concurrent revoke or delete cannot fail it. Revoking a
   * revoked key is a no-op (204, no second audit entry).
   */
  override async remove(principal: Principal, id: string): Promise<void> {
    this.refuseApiKeyPrincipal(principal);
    this.assertId(id);
    await this.prisma.$transaction(async (tx) => {
      const revoked = await this.repository.updateOwned(
        tx,
        principal.user.id,
        id,
        { revokedAt: new Date() },
        { revokedAt: null },
      );
      if (revoked) {
        await this.record(tx, principal, 'revoked', revoked.id, { prefix: revoked.prefix });
        return;
      }
      if (!(await this.repository.findOwned(tx, principal.user.id, id))) throw this.notFound();
    });
  }

  /**
   * A key must not mint or revoke keys: a leaked key could otherwise outlive its own revocation by
   * creating successors, or lock its owner's integrations out. Reading the list is harmless.
   */
  private refuseApiKeyPrincipal(principal: Principal): void {
    if (principal.via === 'api_key') {
      throw new ForbiddenError(
        'API keys cannot create or revoke API keys. Sign in to manage your keys.',
        'api_key_not_allowed',
      );
    }
  }
}
