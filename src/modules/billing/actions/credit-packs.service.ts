import { Injectable } from '@nestjs/common';
import { ValidationError } from '../../../common/errors/app-error.js';
import type { User } from '../../../generated/prisma/client.js';
import { BillingCatalog, packClaim } from '../billing.catalog.js';
import { CheckoutTokenService } from './checkout-token.service.js';
import type { CreditPackCheckoutResponseDto, CreditPacksDto } from './dto/credit-packs.dto.js';

/**
 * Top-up packs (issue 18 item 2): one-time prices that add credits which never expire. Any user can buy
 * one, FREE included, whatever their subscription. The checkout token names the pack and the buyer; the
 * signed transaction.completed that echoes it grants the pack once (PaymentsService).
 */
@Injectable()
export class CreditPacksService {
  constructor(
    private readonly catalog: BillingCatalog,
    private readonly tokens: CheckoutTokenService,
  ) {}

  list(): CreditPacksDto {
    return { items: this.catalog.creditPacks().map((p) => ({ price_id: p.priceId, credits: p.credits })) };
  }

  checkout(user: User, priceId: string): CreditPackCheckoutResponseDto {
    if (this.catalog.packCredits(priceId) === null) {
      throw new ValidationError(
        'Unknown credit pack.',
        [{ field: 'price_id', message: 'is not a configured credit pack' }],
        'unknown_credit_pack',
      );
    }
    const { token, expiresAt } = this.tokens.issue(user.id, packClaim(priceId));
    return {
      price_id: priceId,
      customer_email: user.email,
      custom_data: { checkout_token: token },
      expires_at: expiresAt.toISOString(),
    };
  }
}
