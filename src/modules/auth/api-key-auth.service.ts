import { Injectable } from '@nestjs/common';
import { UnauthenticatedError } from '../../common/errors/app-error.js';
import { PrismaService } from '../../infra/prisma/prisma.service.js';
import { ApiKeysRepository } from '../api-keys/api-keys.repository.js';
import { hashApiKey } from './api-key.util.js';
import type { Principal } from '../../common/principal.js';

const TOUCH_INTERVAL_MS = 60_000;

/** Accepts a valid, unexpired, unrevoked API key as its owner's credential on /api/v1 routes. */
@Injectable()
export class ApiKeyAuthService {
  constructor(
    private readonly prisma: PrismaService,
    private readonly apiKeys: ApiKeysRepository,
  ) {}

  async authenticate(token: string): Promise<Principal> {
    const key = await this.apiKeys.findBySecretHash(this.prisma, hashApiKey(token));
    const now = Date.now();
    if (!key || key.revokedAt || (key.expiresAt && key.expiresAt.getTime() <= now)) {
      throw new UnauthenticatedError('The API key is invalid, revoked or expired.', 'invalid_api_key');
    }
    if (!key.lastUsedAt || now - key.lastUsedAt.getTime() >= TOUCH_INTERVAL_MS) {
      await this.apiKeys.touchLastUsed(this.prisma, key.id);
    }
    return { user: key.user, via: 'api_key', apiKeyId: key.id, emailVerified: key.user.emailVerified };
  }
}
