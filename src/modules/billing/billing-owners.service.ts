import { Injectable } from '@nestjs/common';
import type { Tx } from '../../infra/prisma/prisma.service.js';
import { BillingUsersRepository } from './billing-users.repository.js';
import { CheckoutTokenService } from './checkout-token.service.js';
import { PARKED_REASON } from './webhook-archive.repository.js';

export type OwnerResolution =
  { ok: true; userId: string; via: 'checkout_token' | 'customer_id' } | { ok: false; reason: string };

/**
 * Ties a provider object to one of our users without trusting unsigned fields: first the signed
 * checkout token in custom_data (valid at the time the event occurred), then a customer id that an
 * earlier verified event linked to a user. Nothing else establishes ownership.
 */
@Injectable()
export class BillingOwnersService {
  constructor(
    private readonly tokens: CheckoutTokenService,
    private readonly users: BillingUsersRepository,
  ) {}

  async resolve(
    tx: Tx,
    input: { customData: Record<string, unknown> | null | undefined; customerId: string | null; at: Date },
  ): Promise<OwnerResolution> {
    let tokenProblem: string | null = null;
    const token = input.customData?.checkout_token;
    if (typeof token === 'string' && token.length > 0) {
      const check = this.tokens.verify(token, input.at);
      if (check.ok) {
        if (await this.users.exists(tx, check.claims.userId)) {
          return { ok: true, userId: check.claims.userId, via: 'checkout_token' };
        }
        tokenProblem = 'unknown_user';
      } else {
        tokenProblem = `checkout_token_${check.reason}`;
      }
    } else if (token !== undefined && token !== null) {
      tokenProblem = 'checkout_token_malformed';
    }
    if (input.customerId) {
      const user = await this.users.findByCustomerId(tx, input.customerId);
      if (user) return { ok: true, userId: user.id, via: 'customer_id' };
    }
    return { ok: false, reason: tokenProblem ?? PARKED_REASON };
  }
}
