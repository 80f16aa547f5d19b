import { Injectable } from '@nestjs/common';
import { UnauthenticatedError } from '../../common/errors/app-error.js';
import { PrismaService } from '../../infra/prisma/prisma.service.js';
import { hashApiKey } from './api-key.util.js';
import type { Principal } from '../../common/principal.js';

const TOUCH_INTERVAL_MS = 60_000;

/** Accepts a valid, unexpired, unrevoked API key as its owner's credential on /api/v1 routes. */
@Injectable()
export class ApiKeyAuthService {
  constructor(private readonly prisma: PrismaService) {}

  async authenticate(token: string): Promise<Principal> {
    const key = await this.prisma.apiKey.findUnique({
      where: { secretHash: hashApiKey(token) },
      include: { user: true },
    });
    const now = Date.now();
    if (!key || key.revokedAt || (key.expiresAt && key.expiresAt.getTime() <= now)) {
      throw new UnauthenticatedError('The API key is invalid, revoked or expired.', 'invalid_api_key');
    }
    if (!key.lastUsedAt || now - key.lastUsedAt.getTime() >= TOUCH_INTERVAL_MS) {
      // Conditional, so concurrent requests write at most once a minute.
      await this.prisma.$executeRaw`
        UPDATE api_keys SET last_used_at = now()
        WHERE id = ${key.id}::uuid AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`;
    }
    return { user: key.user, via: 'api_key', apiKeyId: key.id, emailVerified: key.user.emailVerified };
  }
}
