import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC = 'auth:public';

/**
 * Marks a route as reachable without a Bearer token. Every other route is authenticated by the global
 * guard, so a new route cannot become public by accident. The spec's public list: /health,
 * /health/ready, /status, the webhook receivers and /api/v1/email/unsubscribe.
 */
export const Public = () => SetMetadata(IS_PUBLIC, true);
