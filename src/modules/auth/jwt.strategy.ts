import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { passportJwtSecret } from 'jwks-rsa';
import { ExtractJwt, Strategy, type SecretOrKeyProvider } from 'passport-jwt';
import { AppConfig } from '../../config/app-config.js';
import { AppError, UnauthenticatedError } from '../../common/errors/app-error.js';
import { UsersService } from '../users/users.service.js';
import type { Principal } from './principal.js';

/** An error raised by our own code inside the strategy (e.g. the database is down), not by the key set. */
export class StrategyFailure extends Error {
  constructor(readonly original: unknown) {
    super('strategy failure');
  }
}

export interface IdentityClaims {
  sub?: string;
  email?: string;
  azp?: string;
}

const unconfigured: SecretOrKeyProvider = (_req, _token, done) =>
  done(
    new UnauthenticatedError(
      'Token verification is not configured (IDENTITY_JWKS_URL).',
      'auth_not_configured',
    ),
  );

/**
 * RS256 Bearer tokens of the identity provider, verified against its JWKS (keys cached; an unknown kid
 * triggers a re-fetch, rate limited). Any other algorithm is refused; issuer checked; 5 s clock leeway.
 */
@Injectable()
export class JwtStrategy extends PassportStrategy(Strategy, 'jwt') {
  constructor(
    private readonly config: AppConfig,
    private readonly users: UsersService,
  ) {
    const { jwksUrl, issuer, audience } = config.identity;
    super({
      jwtFromRequest: ExtractJwt.fromAuthHeaderAsBearerToken(),
      secretOrKeyProvider: jwksUrl
        ? passportJwtSecret({
            jwksUri: jwksUrl,
            cache: true,
            cacheMaxEntries: 20,
            cacheMaxAge: 10 * 60_000,
            rateLimit: true,
            jwksRequestsPerMinute: 10,
            timeout: 5000,
          })
        : unconfigured,
      algorithms: ['RS256'],
      issuer: issuer ?? undefined,
      audience: audience ?? undefined,
      ignoreExpiration: false,
      jsonWebTokenOptions: { clockTolerance: 5 },
    });
  }

  async validate(claims: IdentityClaims): Promise<Principal> {
    if (!claims.sub) throw new UnauthenticatedError('The token has no subject.', 'invalid_token');
    const parties = this.config.identity.authorizedParties;
    if (parties.length > 0 && (!claims.azp || !parties.includes(claims.azp))) {
      throw new UnauthenticatedError('The token was issued for another party.', 'invalid_token');
    }
    try {
      let user = await this.users.findByIdentityId(claims.sub);
      if (!user) {
        // The user.created webhook is late: create the row just in time when the token carries an e-mail.
        if (!claims.email) throw new UnauthenticatedError('Unknown user.', 'unknown_user');
        user = (
          await this.users.ensureUser({ identityUserId: claims.sub, email: claims.email, via: 'token' })
        ).user;
      }
      return { user, via: 'jwt' };
    } catch (err) {
      // Passport hands every error to the guard alike; wrap ours so the guard can tell them from key-set
      // (identity provider) failures.
      throw err instanceof AppError ? err : new StrategyFailure(err);
    }
  }
}
