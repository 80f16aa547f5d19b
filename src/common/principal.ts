import type { User } from '../generated/prisma/client.js';

export interface Principal {
  user: User;
  /** How the caller proved who they are. API keys never reach admin routes. */
  via: 'jwt' | 'api_key' | 'testing';
  apiKeyId?: string;
  /**
   * The identity provider verified the stored e-mail address (webhook payload, or a token's
   * `email_verified: true` for this very address). Admin rights require it.
   */
  emailVerified: boolean;
}
