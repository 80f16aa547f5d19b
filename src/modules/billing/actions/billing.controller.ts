import { Body, Controller, Get, HttpCode, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentUser } from '../../../common/decorators/current-user.decorator.js';
import { RefuseApiKeys } from '../../../common/decorators/refuse-api-keys.decorator.js';
import { type ApiErrorMap, ApiErrors } from '../../../common/openapi/api-errors.decorator.js';
import type { User } from '../../../generated/prisma/client.js';
import { BillingActionsService } from './billing-actions.service.js';
import { CreditPacksService } from './credit-packs.service.js';
import {
  CreditPackCheckoutRequestDto,
  CreditPackCheckoutResponseDto,
  CreditPacksDto,
} from './dto/credit-packs.dto.js';
import {
  CancelSubscriptionDto,
  ChangeSubscriptionDto,
  CheckoutRequestDto,
  ResumeSubscriptionDto,
} from './dto/billing.dto.js';
import {
  BillingActionResponseDto,
  CheckoutResponseDto,
  CheckoutTokenResponseDto,
  SubscriptionResponseDto,
} from './dto/billing-response.dto.js';

/** Signing a checkout token needs BILLING_WEBHOOK_SECRET (CheckoutTokenService). */
const CHECKOUT_NOT_CONFIGURED: ApiErrorMap[503] = {
  billing_not_configured: 'BILLING_WEBHOOK_SECRET is not set: no checkout token can be signed',
};

/** A second live subscription would bill the user twice (BillingActionsService.assertNoLiveSubscription). */
const CHECKOUT_ERRORS: ApiErrorMap = {
  400: {
    validation_failed:
      'an invalid body, FREE or an unknown tier, or a billing_cycle the tier has no price for (`errors[]` names the field)',
  },
  409: {
    subscription_exists:
      'the user already has a live subscription (active, trialing, past due or paused), which POST /api/v1/billing/subscription/change changes',
  },
  503: CHECKOUT_NOT_CONFIGURED,
};

/** What a call to the provider's API can end in (BillingApiClient, after its retries); nothing changed here. */
const PROVIDER_ERRORS: ApiErrorMap = {
  502: {
    billing_rejected: 'the provider refused the request',
    upstream_invalid_response: 'the provider answered off its contract',
    upstream_response_too_large: 'the provider answered with too large a body',
  },
  503: {
    billing_unavailable:
      'the provider is unavailable or rate limiting after 3 attempts, or cannot be reached (retry after `Retry-After` seconds)',
    billing_not_configured: 'BILLING_API_URL or BILLING_API_KEY is not set',
  },
};

@ApiTags('billing')
@ApiBearerAuth()
/**
 * Starting, changing, cancelling or resuming a subscription needs an interactive sign-in: a leaked API
 * key must not be able to end (or buy) a subscription. Reading it is fine with a key.
 */
@Controller('billing')
export class BillingController {
  constructor(
    private readonly billing: BillingActionsService,
    private readonly packs: CreditPacksService,
  ) {}

  /** Top-up packs for sale (one-time prices; their credits never expire). */
  @Get('credit-packs')
  @ApiOkResponse({ type: CreditPacksDto })
  creditPacks(): CreditPacksDto {
    return this.packs.list();
  }

  /** What the checkout overlay needs to sell one pack to the caller (any tier, FREE included). */
  @Post('credit-packs/checkout')
  @RefuseApiKeys()
  @HttpCode(200)
  @ApiOkResponse({ type: CreditPackCheckoutResponseDto })
  @ApiErrors({
    400: { unknown_credit_pack: 'the price is not a configured pack' },
    503: CHECKOUT_NOT_CONFIGURED,
  })
  creditPackCheckout(
    @CurrentUser() user: User,
    @Body() body: CreditPackCheckoutRequestDto,
  ): CreditPackCheckoutResponseDto {
    return this.packs.checkout(user, body.price_id);
  }

  @ApiOperation({
    summary: 'Get a checkout token',
    description:
      "A short-lived token tying a provider checkout to the caller: open the provider's checkout with `customData: { checkout_token }`. The tier follows from the webhook; poll GET /api/v1/me.",
  })
  @Post('checkout-token')
  @RefuseApiKeys()
  @HttpCode(200)
  @ApiOkResponse({ type: CheckoutTokenResponseDto })
  @ApiErrors(CHECKOUT_ERRORS)
  checkoutToken(
    @CurrentUser() user: User,
    @Body() body: CheckoutRequestDto,
  ): Promise<CheckoutTokenResponseDto> {
    return this.billing.checkoutToken(user, body.tier, body.billing_cycle);
  }

  @ApiOperation({
    summary: 'Get what the checkout overlay needs',
    description:
      "Price id, customer e-mail and `custom_data.checkout_token` for the provider's checkout overlay (Paddle.js `Checkout.open`).",
  })
  @Post('checkout')
  @RefuseApiKeys()
  @HttpCode(200)
  @ApiOkResponse({ type: CheckoutResponseDto, description: 'What the checkout overlay needs' })
  @ApiErrors(CHECKOUT_ERRORS)
  checkout(@CurrentUser() user: User, @Body() body: CheckoutRequestDto): Promise<CheckoutResponseDto> {
    return this.billing.checkout(user, body.tier, body.billing_cycle);
  }

  @ApiOperation({ summary: 'Get the current subscription' })
  @Get('subscription')
  @ApiOkResponse({ type: SubscriptionResponseDto })
  @ApiErrors({ 404: { no_subscription: 'the user has no subscription, or only expired ones' } })
  subscription(@CurrentUser() user: User): Promise<SubscriptionResponseDto> {
    return this.billing.current(user);
  }

  @ApiOperation({
    summary: 'Cancel the subscription',
    description:
      'At the end of the period, or now with `cancel_immediately`; the provider confirms through its webhook.',
  })
  @Post('subscription/cancel')
  @RefuseApiKeys()
  @HttpCode(200)
  @ApiOkResponse({
    type: BillingActionResponseDto,
    description: 'Accepted by the provider; the webhook follows',
  })
  @ApiErrors({
    409: {
      no_active_subscription: 'nothing to cancel',
      cancel_already_scheduled:
        'a cancel at the end of the period is already scheduled (also when the provider holds it and its webhook has not arrived yet)',
    },
  })
  @ApiErrors(PROVIDER_ERRORS)
  cancel(@CurrentUser() user: User, @Body() body: CancelSubscriptionDto): Promise<BillingActionResponseDto> {
    return this.billing.cancel(user, body.cancel_immediately ?? false);
  }

  @ApiOperation({
    summary: 'Change the tier',
    description:
      "To another paid tier at the end of the period (FREE cancels at the end of the period). The new price bills the subscription's current billing cycle (a yearly subscription stays yearly).",
  })
  @Post('subscription/change')
  @RefuseApiKeys()
  @HttpCode(200)
  @ApiOkResponse({
    type: BillingActionResponseDto,
    description: 'Accepted by the provider; the webhook follows',
  })
  @ApiErrors({
    400: { validation_failed: 'an invalid body or an unknown tier' },
    409: {
      same_tier:
        'the target is the tier the subscription bills next (without a live subscription: the current tier)',
      no_recoverable_subscription:
        'no live subscription to change (a FREE user starts one through POST /api/v1/billing/checkout)',
      subscription_paused: 'the subscription is paused: resume it first, or cancel it',
      subscription_past_due: 'a payment is past due: update the payment method first, or cancel',
      cancel_already_scheduled:
        'a change to FREE while a cancel at the end of the period is already scheduled',
      no_price_for_cycle: 'the target tier has no price for the billing cycle of the subscription',
    },
  })
  @ApiErrors(PROVIDER_ERRORS)
  change(@CurrentUser() user: User, @Body() body: ChangeSubscriptionDto): Promise<BillingActionResponseDto> {
    return this.billing.change(user, body.target_tier);
  }

  @ApiOperation({ summary: 'Resume a paused subscription' })
  @Post('subscription/resume')
  @RefuseApiKeys()
  @HttpCode(200)
  @ApiOkResponse({
    type: BillingActionResponseDto,
    description: 'Accepted by the provider; the webhook follows',
  })
  @ApiErrors({ 409: { not_paused: 'no paused subscription to resume' } })
  @ApiErrors(PROVIDER_ERRORS)
  resume(@CurrentUser() user: User, @Body() _body: ResumeSubscriptionDto): Promise<BillingActionResponseDto> {
    return this.billing.resume(user);
  }
}
