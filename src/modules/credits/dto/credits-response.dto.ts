import { ApiProperty } from '@nestjs/swagger';

export class CreditTransactionDto {
  id!: string;
  /** Signed: positive = grant, refund or settle (the unused part of a reservation), negative = spend. */
  delta!: number;
  /** grant | spend | refund | adjustment | settle | purchase | expiry | clawback */
  kind!: string;
  /** Idempotency key of the operation (billing event, metered request id, ...). */
  job_id!: string;
  created_at!: Date;
}

export class CreditsPageDto {
  /** Sum of delta over all of the caller's rows. */
  balance!: number;

  @ApiProperty({
    description: 'Plan credits left (spent first; may expire under the tier rollover rule)',
    example: 730,
  })
  plan_remaining!: number;

  @ApiProperty({
    description: 'Credits bought in packs left (spent after plan credits; never expire)',
    example: 500,
  })
  purchased_remaining!: number;

  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description:
      'When unspent plan credits expire (the period end under rollover none or cap); null when they never do',
    example: '2026-12-25T09:00:00.000Z',
  })
  plan_expires_at!: string | null;
  items!: CreditTransactionDto[];
  total!: number;
  page!: number;
  page_size!: number;
}
