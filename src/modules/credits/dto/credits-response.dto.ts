export class CreditTransactionDto {
  id!: string;
  /** Signed: positive = grant, refund or settle (the unused part of a reservation), negative = spend. */
  delta!: number;
  /** grant | spend | refund | adjustment | settle */
  kind!: string;
  /** Idempotency key of the operation (billing event, metered request id, ...). */
  job_id!: string;
  created_at!: Date;
}

export class CreditsPageDto {
  /** Sum of delta over all of the caller's rows. */
  balance!: number;
  items!: CreditTransactionDto[];
  total!: number;
  page!: number;
  page_size!: number;
}
