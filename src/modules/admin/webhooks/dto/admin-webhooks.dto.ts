import { Type } from 'class-transformer';
import { IsIn, IsInt, IsISO8601, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { HasFourDigitYear, HasNoNul } from '../../../../common/validation/field-validators.js';
import { MAX_ADMIN_PAGE } from '../../directory/dto/admin-list.query.dto.js';

const PROVIDERS = ['billing', 'identity', 'email'] as const;
const STATUSES = ['RECEIVED', 'PROCESSED', 'SKIPPED', 'FAILED'] as const;

export class ListWebhooksQueryDto {
  /** 1-based page number. */
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(MAX_ADMIN_PAGE)
  page?: number;

  /** Page size, 1..100 (default 50). */
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(100)
  page_size?: number;

  @IsOptional()
  @IsIn(PROVIDERS)
  provider?: (typeof PROVIDERS)[number];

  @IsOptional()
  @IsIn(STATUSES)
  status?: (typeof STATUSES)[number];

  /** Exact event type, e.g. subscription.created. */
  @IsOptional()
  @IsString()
  @MaxLength(100)
  @HasNoNul()
  event_type?: string;

  /** Received at or after this ISO 8601 time. */
  @IsOptional()
  @IsISO8601({ strict: true })
  @HasFourDigitYear()
  from?: string;

  /** Received at or before this ISO 8601 time. */
  @IsOptional()
  @IsISO8601({ strict: true })
  @HasFourDigitYear()
  to?: string;
}

export class BulkReplayDto {
  /** Which archived events to run again: FAILED (the usual case) or SKIPPED. */
  @IsIn(['FAILED', 'SKIPPED'])
  status!: 'FAILED' | 'SKIPPED';

  @IsOptional()
  @IsIn(PROVIDERS)
  provider?: (typeof PROVIDERS)[number];

  @IsOptional()
  @IsISO8601({ strict: true })
  @HasFourDigitYear()
  from?: string;

  @IsOptional()
  @IsISO8601({ strict: true })
  @HasFourDigitYear()
  to?: string;
}

export class WebhookItemDto {
  id!: string;
  provider!: string;
  event_id!: string;
  event_type!: string;
  /** RECEIVED, PROCESSED, SKIPPED or FAILED */
  status!: string;
  attempts!: number;
  /** The failure, or the reason an event was skipped. */
  error!: string | null;
  occurred_at!: string | null;
  received_at!: string;
  processed_at!: string | null;
  /** delivery (the provider's webhook) or backfill (its event log). */
  source!: string;
}

export class WebhookDetailDto extends WebhookItemDto {
  /** As archived (identity payloads keep only ids, type, timestamps and e-mail addresses). */
  payload!: Record<string, unknown>;
}

export class WebhookListDto {
  items!: WebhookItemDto[];
  total!: number;
  page!: number;
  page_size!: number;
}

export class ReplayResultDto {
  id!: string;
  /** The archive row's status after the replay. */
  status!: string;
  /** processed, skipped, failed, or duplicate (a concurrent replay applied it). */
  outcome!: string;
}

export class BulkReplayResultDto {
  queued!: number;
}
