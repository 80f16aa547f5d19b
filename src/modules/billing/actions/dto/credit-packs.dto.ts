import { ApiInt } from '../../../../common/openapi/api-fields.js';
import { ApiProperty } from '@nestjs/swagger';
import { IsNotEmpty, IsString, MaxLength } from 'class-validator';
import { CheckoutCustomDataDto } from './billing-response.dto.js';

export class CreditPackDto {
  @ApiProperty({ description: 'The one-time billing price of the pack', example: 'pri_pack_s' })
  price_id!: string;

  @ApiInt({ description: 'Credits the pack adds; they never expire', example: 500 })
  credits!: number;
}

export class CreditPacksDto {
  @ApiProperty({ type: [CreditPackDto] })
  items!: CreditPackDto[];
}

export class CreditPackCheckoutRequestDto {
  @ApiProperty({
    description: 'A configured pack price (GET /api/v1/billing/credit-packs)',
    example: 'pri_pack_s',
  })
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  price_id!: string;
}

export class CreditPackCheckoutResponseDto {
  @ApiProperty({ example: 'pri_pack_s' })
  price_id!: string;

  @ApiProperty({ example: 'ada@example.com' })
  customer_email!: string;

  @ApiProperty({
    type: CheckoutCustomDataDto,
    description: 'Pass to the checkout; the token names the pack and the buyer',
  })
  custom_data!: CheckoutCustomDataDto;

  @ApiProperty({
    description: 'When the checkout token stops being accepted',
    example: '2026-11-25T10:00:00.000Z',
  })
  expires_at!: string;
}
