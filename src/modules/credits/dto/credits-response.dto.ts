import { ApiProperty } from '@nestjs/swagger';
import { ApiEnum, ApiInt, ApiTimestamp, ApiUuid } from '../../../common/openapi/api-fields.js';
import { CREDIT_KINDS } from '../credits.service.js';

export class CreditTransactionDto {
  @ApiUuid()
  id!: string;
  /** Signed: positive = grant, refund or settle (the unused part of a reservation), negative = spend. */
  @ApiInt({ example: -2 })
  delta!: number;
  /** grant | spend | refund | adjustment | settle | purchase | expiry | clawback */
  @ApiEnum(Object.values(CREDIT_KINDS))
  kind!: string;
  /** Idempotency key of the operation (billing event, metered request id, ...). */
  @ApiProperty({ type: String, example: 'ai-9b2f0c4e-51d7-4a36-8f0e-2d6c1a7b3e95' })
  job_id!: string;
  @ApiTimestamp()
  created_at!: Date;
}

export class CreditsPageDto {
  /** Sum of delta over all of the caller's rows. */
  @ApiInt({ example: 998 })
  balance!: number;

  @ApiInt({
    description: 'Plan credits left (spent first; may expire under the tier rollover rule)',
    example: 730,
  })
  plan_remaining!: number;

  @ApiInt({
    description: 'Credits bought in packs left (spent after plan credits; never expire)',
    example: 500,
  })
  purchased_remaining!: number;

  @ApiTimestamp({
    nullable: true,
    description:
      'When unspent plan credits expire (the period end under rollover none or cap, when an allowance follows it); null when they never do, also when the subscription will not renew then (a cancel or pause scheduled for the period end)',
    example: '2026-12-25T09:00:00.000Z',
  })
  plan_expires_at!: string | null;
  items!: CreditTransactionDto[];
  @ApiInt()
  total!: number;
  @ApiInt({ minimum: 1 })
  page!: number;
  @ApiInt({ minimum: 1, maximum: 200 })
  page_size!: number;
}
