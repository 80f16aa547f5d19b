import type { KeyObject } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { ExtractJwt, Strategy, type SecretOrKeyProvider } from 'passport-jwt';
import { AppConfig } from '../../config/app-config.js';
import { AppError, UnauthenticatedError } from '../../common/errors/app-error.js';
import { UsersService } from '../users/users.service.js';
import { CLOCK_LEEWAY_SECONDS, checkClaims, tokenHeader, tokenPayload } from './identity-claims.js';
import { IdentityKeySet } from './identity-key-set.js';
import type { Principal } from '../../common/principal.js';

/** An error raised by our own code inside the strategy (e.g. the database is down), not by the key set. */
export class StrategyFailure extends Error {
  constructor(readonly original: unknown) {
    super('strategy failure');
  }
}

const unconfigured: SecretOrKeyProvider = (_req, _token, done) =>
  done(
    new UnauthenticatedError(
      'Token verification is not configured (IDENTITY_JWKS_URL).',
      'auth_not_configured',
    ),
  );

/**
 * Hands jsonwebtoken the key the token's kid names, from the shared key set. A `crit` header is refused:
 * this service implements no JWS extension, and RFC 7515 requires refusing a token that needs one. A
 * payload that is not a JSON object (`null`, `5`, `"x"`, an array) is refused before any key lookup:
 * jsonwebtoken 9 reads `payload.nbf` unguarded once the signature checks out, so a validly signed `null`
 * made it throw instead of answering.
 *
 * `done` runs jsonwebtoken and passport synchronously. Called from the key lookup's promise, anything
 * they threw became an unhandled rejection (the process exits) and the request never got an answer; so
 * `settle` catches it and fails this request instead (`StrategyFailure`: a logged 500, it is our bug).
 */
export function keyProvider(keys: IdentityKeySet): SecretOrKeyProvider {
  return (_req, token, done) => {
    const header = tokenHeader(token);
    if (!header) return done(new UnauthenticatedError('The token is invalid.', 'invalid_token'));
    if (header.crit !== undefined) {
      return done(
        new UnauthenticatedError(
          'The token requires header extensions (crit) that are not supported.',
          'invalid_token',
        ),
      );
    }
    if (typeof header.kid !== 'string' || header.kid.length === 0 || header.kid.length > 256) {
      return done(new UnauthenticatedError('The token names no signing key.', 'invalid_token'));
    }
    if (!tokenPayload(token)) {
      return done(new UnauthenticatedError('The token is invalid.', 'invalid_token'));
    }
    const settle = (err: unknown, key?: KeyObject) => {
      try {
        done(err, key as never);
      } catch (thrown) {
        // Passport has not answered yet (the throw came from verifying, before its callback): fail it.
        done(new StrategyFailure(thrown));
      }
    };
    keys.key(header.kid).then(
      (key) => settle(null, key),
      (err: unknown) => settle(err),
    );
  };
}

/**
 * RS256 Bearer tokens of the identity provider, verified against its JWKS (IdentityKeySet: prefetched,
 * periodically refreshed, unknown kids share one rate-limited refresh). Any other algorithm is refused;
 * issuer checked; 5 s clock leeway; exp and iat required and the age capped (checkClaims).
 */
@Injectable()
export class JwtStrategy extends PassportStrategy(Strategy, 'jwt') {
  constructor(
    private readonly config: AppConfig,
    private readonly users: UsersService,
    keys: IdentityKeySet,
  ) {
    const { jwksUrl, issuer, audience } = config.identity;
    super({
      jwtFromRequest: ExtractJwt.fromAuthHeaderAsBearerToken(),
      secretOrKeyProvider: jwksUrl ? keyProvider(keys) : unconfigured,
      algorithms: ['RS256'],
      issuer: issuer ?? undefined,
      audience: audience ?? undefined,
      ignoreExpiration: false,
      jsonWebTokenOptions: { clockTolerance: CLOCK_LEEWAY_SECONDS },
    });
  }

  async validate(payload: Record<string, unknown>): Promise<Principal> {
    const claims = checkClaims(payload, this.config.identity.maxTokenAgeSeconds);
    const parties = this.config.identity.authorizedParties;
    if (parties.length > 0 && (!claims.azp || !parties.includes(claims.azp))) {
      throw new UnauthenticatedError('The token was issued for another party.', 'invalid_token');
    }
    try {
      let user = await this.users.findByIdentityId(claims.sub);
      if (!user) {
        // The user.created webhook is late: create the row just in time, but only from an address the
        // identity provider verified (DESIGN section 4): an unverified claim could be anyone's address.
        if (!claims.email) throw new UnauthenticatedError('Unknown user.', 'unknown_user');
        if (!claims.emailVerified) {
          throw new UnauthenticatedError(
            'Unknown user: the token carries no verified e-mail address.',
            'unknown_user',
          );
        }
        const ensured = await this.users.ensureUserStandalone(
          {
            identityUserId: claims.sub,
            email: claims.email,
            emailVerified: true,
            via: 'token',
          },
          claims.issuedAt,
        );
        // The provider deleted the identity after it issued this token (the row was erased, or never made).
        if (!ensured) {
          throw new UnauthenticatedError(
            'Unknown user: the identity provider deleted this user after the token was issued.',
            'unknown_user',
          );
        }
        user = ensured.user;
      }
      // The claim never replaces the stored address; it may only confirm that this very address is verified.
      if (!user.emailVerified && claims.emailVerified && claims.email === user.email) {
        await this.users.markEmailVerified(user);
        user = { ...user, emailVerified: true };
      }
      return { user, via: 'jwt', emailVerified: user.emailVerified };
    } catch (err) {
      // Passport hands every error to the guard alike; wrap ours so the guard can tell them from key-set
      // (identity provider) failures.
      throw err instanceof AppError ? err : new StrategyFailure(err);
    }
  }
}
