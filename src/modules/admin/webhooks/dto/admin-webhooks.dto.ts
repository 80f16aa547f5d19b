import { OptionalInstant } from '../../../../common/validation/time-range.js';
import { ApiProperty } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, MaxLength } from 'class-validator';
import { HasNoNul } from '../../../../common/validation/field-validators.js';
import { StrictPageQueryDto } from '../../../../common/paging/page-query.dto.js';
import { ApiEnum, ApiInt, ApiTimestamp, ApiUuid } from '../../../../common/openapi/api-fields.js';

const PROVIDERS = ['billing', 'identity', 'email'] as const;
const STATUSES = ['RECEIVED', 'PROCESSED', 'SKIPPED', 'FAILED'] as const;

export class ListWebhooksQueryDto extends StrictPageQueryDto {
  @IsOptional()
  @IsIn(PROVIDERS)
  @ApiEnum(PROVIDERS)
  provider?: (typeof PROVIDERS)[number];

  @IsOptional()
  @IsIn(STATUSES)
  @ApiEnum(STATUSES)
  status?: (typeof STATUSES)[number];

  /** Exact event type, e.g. subscription.created. */
  @IsOptional()
  @IsString()
  @MaxLength(100)
  @HasNoNul()
  @ApiProperty({ type: String, example: 'subscription.created' })
  event_type?: string;

  /** Received at or after this ISO 8601 time. */
  @OptionalInstant()
  from?: string;

  /** Received at or before this ISO 8601 time. */
  @OptionalInstant()
  to?: string;
}

export class BulkReplayDto {
  /** Which archived events to run again: FAILED (the usual case) or SKIPPED. */
  @IsIn(['FAILED', 'SKIPPED'])
  @ApiEnum(['FAILED', 'SKIPPED'])
  status!: 'FAILED' | 'SKIPPED';

  @IsOptional()
  @IsIn(PROVIDERS)
  @ApiEnum(PROVIDERS)
  provider?: (typeof PROVIDERS)[number];

  @OptionalInstant()
  from?: string;

  @OptionalInstant()
  to?: string;
}

export class WebhookItemDto {
  @ApiUuid()
  id!: string;
  @ApiEnum(PROVIDERS)
  provider!: string;
  @ApiProperty({ type: String, example: 'evt_01h8441jn5pcwrfhwh78jqt8hk' })
  event_id!: string;
  @ApiProperty({ type: String, example: 'subscription.created' })
  event_type!: string;
  /** RECEIVED, PROCESSED, SKIPPED or FAILED */
  @ApiEnum(STATUSES)
  status!: string;
  @ApiInt({ minimum: 0 })
  attempts!: number;
  /** The failure, or the reason an event was skipped. */
  error!: string | null;
  @ApiTimestamp()
  occurred_at!: string | null;
  @ApiTimestamp()
  received_at!: string;
  @ApiTimestamp()
  processed_at!: string | null;
  /** delivery (the provider's webhook) or backfill (its event log). */
  @ApiEnum(['delivery', 'backfill'])
  source!: string;
  /**
   * When this FAILED event is re-applied automatically (an event of any provider that failed processing);
   * null when no automatic re-apply is coming (a refused payload, none left, or not FAILED).
   */
  @ApiTimestamp()
  retry_at!: string | null;
  /** Automatic re-applies made so far (at most 7). */
  @ApiInt({ minimum: 0 })
  auto_reapplies!: number;
}

export class WebhookDetailDto extends WebhookItemDto {
  /** As archived (identity payloads keep only ids, type, timestamps and e-mail addresses). */
  payload!: Record<string, unknown>;
}

export class WebhookListDto {
  items!: WebhookItemDto[];
  @ApiInt()
  total!: number;
  @ApiInt({ minimum: 1 })
  page!: number;
  @ApiInt({ minimum: 1 })
  page_size!: number;
}

export class ReplayResultDto {
  @ApiUuid()
  id!: string;
  /** The archive row's status after the replay. */
  @ApiEnum(STATUSES)
  status!: string;
  /** processed, skipped, failed, or duplicate (a concurrent replay applied it). */
  @ApiEnum(['processed', 'skipped', 'failed', 'duplicate'])
  outcome!: string;
}

export class BulkReplayResultDto {
  @ApiInt({ minimum: 0, example: 3 })
  queued!: number;
}
