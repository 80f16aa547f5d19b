import { Injectable, Logger } from '@nestjs/common';
import type { Tx } from '../../../infra/prisma/prisma.service.js';
import { BillingUsersRepository } from './billing-users.repository.js';
import { CheckoutTokenService } from '../actions/checkout-token.service.js';
import { PARKED_REASON } from '../../webhooks/webhook-inbox.repository.js';
import { packClaim } from '../billing.catalog.js';

export type PackBuyer = { ok: true; userId: string; priceId: string } | { ok: false; reason: string };

export type OwnerResolution =
  | {
      ok: true;
      userId: string;
      via: 'checkout_token' | 'customer_id';
      /** Set when the checkout token was authentic but had expired before the event occurred. */
      lateToken?: { expiresAt: Date };
    }
  | { ok: false; reason: string };

/**
 * Ties a provider object to one of our users without trusting unsigned fields: first the signed
 * checkout token in custom_data, then a customer id that an earlier verified event linked to a user.
 * Nothing else establishes ownership.
 *
 * The token's signature is what matters, not its age: it can only bind a subscription to the user it
 * was issued to, so an expired but authentic token (a checkout overlay left open for hours) still ties
 * the paid subscription to its buyer. Refusing it would cut a paying customer off for good, because
 * every later event of the subscription carries the same custom_data. Lateness is logged and returned
 * so the caller can audit it; a forged or malformed token is still refused.
 */
@Injectable()
export class BillingOwnersService {
  private readonly logger = new Logger(BillingOwnersService.name);

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
      const check = this.tokens.authenticate(token);
      if (check.ok) {
        const { userId, expiresAt } = check.claims;
        if (await this.users.exists(tx, userId)) {
          if (expiresAt.getTime() > input.at.getTime()) return { ok: true, userId, via: 'checkout_token' };
          this.logger.warn(
            {
              user_id: userId,
              token_expired_at: expiresAt.toISOString(),
              occurred_at: input.at.toISOString(),
              seconds_late: Math.round((input.at.getTime() - expiresAt.getTime()) / 1000),
            },
            'expired but authentic checkout token accepted for ownership',
          );
          return { ok: true, userId, via: 'checkout_token', lateToken: { expiresAt } };
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

  /**
   * The buyer of a top-up pack: only a checkout token we signed whose claim names one of the transaction's
   * pack prices (a subscription's token, or another pack's, pays out nothing), issued to a user who exists.
   * A customer id that an earlier event linked to a different user makes the token foreign: nothing is
   * granted. Expiry is tolerated as for subscriptions (the customer paid).
   */
  async resolvePackBuyer(
    tx: Tx,
    input: {
      customData: Record<string, unknown> | null | undefined;
      customerId: string | null;
      packPrices: string[];
    },
  ): Promise<PackBuyer> {
    const token = input.customData?.checkout_token;
    if (typeof token !== 'string' || token.length === 0)
      return { ok: false, reason: 'pack_without_checkout_token' };
    const check = this.tokens.authenticate(token);
    if (!check.ok) return { ok: false, reason: `checkout_token_${check.reason}` };
    const priceId = input.packPrices.find((price) => packClaim(price) === check.claims.tier);
    if (!priceId) return { ok: false, reason: 'checkout_token_other_purchase' };
    const { userId } = check.claims;
    if (!(await this.users.exists(tx, userId))) return { ok: false, reason: 'unknown_user' };
    if (input.customerId) {
      const linked = await this.users.findByCustomerId(tx, input.customerId);
      if (linked && linked.id !== userId) return { ok: false, reason: 'checkout_token_foreign_customer' };
    }
    return { ok: true, userId, priceId };
  }
}
