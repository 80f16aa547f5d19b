import { Body, Controller, Get, HttpCode, Post } from '@nestjs/common';
import {
  ApiBadGatewayResponse,
  ApiBadRequestResponse,
  ApiBearerAuth,
  ApiConflictResponse,
  ApiForbiddenResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiServiceUnavailableResponse,
  ApiTags,
} from '@nestjs/swagger';
import { CurrentUser } from '../../../common/decorators/current-user.decorator.js';
import { RefuseApiKeys } from '../../../common/decorators/refuse-api-keys.decorator.js';
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
  @ApiForbiddenResponse({ description: 'api_key_not_allowed: called with an API key' })
  @HttpCode(200)
  @ApiOkResponse({ type: CreditPackCheckoutResponseDto })
  @ApiBadRequestResponse({ description: 'unknown_credit_pack: the price is not a configured pack' })
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
  @ApiForbiddenResponse({ description: 'api_key_not_allowed: called with an API key' })
  @HttpCode(200)
  @ApiOkResponse({ type: CheckoutTokenResponseDto })
  @ApiBadRequestResponse({
    description: 'validation_failed: FREE or an unknown tier; a billing_cycle the tier has no price for',
  })
  @ApiConflictResponse({ description: 'The user already has a live subscription' })
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
  @ApiForbiddenResponse({ description: 'api_key_not_allowed: called with an API key' })
  @HttpCode(200)
  @ApiOkResponse({ type: CheckoutResponseDto, description: 'What the checkout overlay needs' })
  @ApiBadRequestResponse({
    description: 'validation_failed: FREE or an unknown tier; a billing_cycle the tier has no price for',
  })
  @ApiConflictResponse({ description: 'The user already has a live subscription' })
  checkout(@CurrentUser() user: User, @Body() body: CheckoutRequestDto): Promise<CheckoutResponseDto> {
    return this.billing.checkout(user, body.tier, body.billing_cycle);
  }

  @ApiOperation({ summary: 'Get the current subscription' })
  @Get('subscription')
  @ApiOkResponse({ type: SubscriptionResponseDto })
  @ApiNotFoundResponse({ description: 'No current subscription' })
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
  @ApiForbiddenResponse({ description: 'api_key_not_allowed: called with an API key' })
  @HttpCode(200)
  @ApiOkResponse({
    type: BillingActionResponseDto,
    description: 'Accepted by the provider; the webhook follows',
  })
  @ApiConflictResponse({
    description:
      'no_active_subscription: nothing to cancel; cancel_already_scheduled: a cancel at the end of the period is already scheduled (also when the provider holds it and its webhook has not arrived yet)',
  })
  @ApiBadGatewayResponse({ description: 'The provider refused or answered invalidly' })
  @ApiServiceUnavailableResponse({ description: 'The provider is unavailable after 3 attempts' })
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
  @ApiForbiddenResponse({ description: 'api_key_not_allowed: called with an API key' })
  @HttpCode(200)
  @ApiOkResponse({
    type: BillingActionResponseDto,
    description: 'Accepted by the provider; the webhook follows',
  })
  @ApiBadRequestResponse({ description: 'validation_failed: an unknown tier' })
  @ApiConflictResponse({
    description:
      'Same tier, no subscription that can be changed, cancel_already_scheduled (a cancel at the end of the period is scheduled), or no_price_for_cycle: the target tier has no price for the billing cycle of the subscription',
  })
  @ApiBadGatewayResponse({ description: 'The provider refused or answered invalidly' })
  @ApiServiceUnavailableResponse({ description: 'The provider is unavailable after 3 attempts' })
  change(@CurrentUser() user: User, @Body() body: ChangeSubscriptionDto): Promise<BillingActionResponseDto> {
    return this.billing.change(user, body.target_tier);
  }

  @ApiOperation({ summary: 'Resume a paused subscription' })
  @Post('subscription/resume')
  @RefuseApiKeys()
  @ApiForbiddenResponse({ description: 'api_key_not_allowed: called with an API key' })
  @HttpCode(200)
  @ApiOkResponse({
    type: BillingActionResponseDto,
    description: 'Accepted by the provider; the webhook follows',
  })
  @ApiConflictResponse({ description: 'No paused subscription' })
  @ApiBadGatewayResponse({ description: 'The provider refused or answered invalidly' })
  @ApiServiceUnavailableResponse({ description: 'The provider is unavailable after 3 attempts' })
  resume(@CurrentUser() user: User, @Body() _body: ResumeSubscriptionDto): Promise<BillingActionResponseDto> {
    return this.billing.resume(user);
  }
}
