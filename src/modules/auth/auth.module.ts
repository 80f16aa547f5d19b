import { Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { PassportModule } from '@nestjs/passport';
import { ApiKeysRepository } from '../api-keys/api-keys.repository.js';
import { UsersModule } from '../users/users.module.js';
import { AdminEmailRepository } from './admin-email.repository.js';
import { AdminGuard } from './admin.guard.js';
import { ApiKeyAuthService } from './api-key-auth.service.js';
import { AuthenticationGuard } from './authentication.guard.js';
import { IdentityKeySet } from './identity-key-set.js';
import { JwtStrategy } from './jwt.strategy.js';
import { RequestRateLimiter, RequestRateLimitGuard } from './request-rate-limit.js';

@Global()
@Module({
  imports: [PassportModule, UsersModule],
  providers: [
    IdentityKeySet,
    JwtStrategy,
    ApiKeyAuthService,
    ApiKeysRepository,
    AdminGuard,
    AdminEmailRepository,
    RequestRateLimiter,
    { provide: APP_GUARD, useClass: AuthenticationGuard },
    // After authentication: it needs to know whether the request has a user.
    { provide: APP_GUARD, useClass: RequestRateLimitGuard },
  ],
  exports: [AdminGuard, AdminEmailRepository, RequestRateLimiter, IdentityKeySet],
})
export class AuthModule {}
