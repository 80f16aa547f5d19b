import { applyDecorators, SetMetadata } from '@nestjs/common';
import { ApiErrors } from '../openapi/api-errors.decorator.js';

export const REFUSE_API_KEYS = 'auth:refuse-api-keys';

/**
 * Routes that need an interactive identity-provider sign-in: an API key gets 403 `api_key_not_allowed`,
 * whether the account is live or soft-deleted. For what a leaked key must not be able to do: delete or
 * restore the account (undoing an erasure the identity provider asked for) or download all of its data.
 * The refusal is documented where the guard makes it, so a route cannot have one without the other.
 */
export const RefuseApiKeys = () =>
  applyDecorators(
    SetMetadata(REFUSE_API_KEYS, true),
    ApiErrors({ 403: { api_key_not_allowed: 'called with an API key (sign in to do this)' } }),
  );
