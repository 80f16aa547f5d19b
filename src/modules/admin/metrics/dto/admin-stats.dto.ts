import { ApiProperty, getSchemaPath } from '@nestjs/swagger';
import { ApiInt, ApiTimestamp } from '../../../../common/openapi/api-fields.js';

export class TableCountDto {
  @ApiInt({ minimum: 0, example: 1250 })
  count!: number;
  /** false: the planner's estimate (pg_class / pg_stat), used for big tables instead of a full count. */
  exact!: boolean;
}

export class QueueCountsDto {
  @ApiInt()
  waiting!: number;
  @ApiInt()
  active!: number;
  @ApiInt()
  delayed!: number;
  @ApiInt()
  prioritized!: number;
  @ApiInt()
  waiting_children!: number;
  /** The queue itself is paused (no job is picked up). */
  paused!: boolean;
  /** Failed jobs kept (retention 7 days). */
  @ApiInt()
  failed!: number;
  /** Completed jobs kept (retention 24 h). */
  @ApiInt()
  completed!: number;
  /** Jobs that failed for good (retries exhausted) in the last 24 h. */
  @ApiInt()
  failed_last_24h!: number;
}

export class QueuesDto {
  /** false when Redis did not answer: the rest of the report is still served. */
  available!: boolean;
  @ApiProperty({ type: String, nullable: true })
  error!: string | null;
  @ApiProperty({ type: 'integer', nullable: true })
  failed_last_24h!: number | null;
  @ApiProperty({
    type: 'object',
    nullable: true,
    additionalProperties: { $ref: getSchemaPath(QueueCountsDto) },
    description: 'Per queue name; null when unavailable',
  })
  by_name!: Record<string, QueueCountsDto> | null;
}

export class JobRunDto {
  name!: string;
  /** Cron expression, UTC (six fields: the first is seconds). */
  schedule!: string;
  /** running | ok | failed; null (like every last_* field) when the job never ran. */
  @ApiProperty({ type: String, nullable: true, enum: ['running', 'ok', 'failed'] })
  last_status!: string | null;
  @ApiTimestamp({ nullable: true })
  last_started_at!: string | null;
  @ApiTimestamp({ nullable: true })
  last_finished_at!: string | null;
  @ApiProperty({ type: 'integer', nullable: true })
  last_duration_ms!: number | null;
  @ApiProperty({ type: String, nullable: true })
  last_error!: string | null;
  @ApiInt()
  runs!: number;
}

export class WebhookStatusCountsDto {
  @ApiInt()
  received!: number;
  @ApiInt()
  processed!: number;
  @ApiInt()
  failed!: number;
  @ApiInt()
  skipped!: number;
  @ApiInt()
  total!: number;
}

export class WebhooksDto {
  by_status!: WebhookStatusCountsDto;
  @ApiProperty({
    type: 'object',
    additionalProperties: { $ref: getSchemaPath(WebhookStatusCountsDto) },
    description: 'Per provider (billing, identity)',
  })
  by_provider!: Record<string, WebhookStatusCountsDto>;
  /** Archived events whose processing failed, received in the last 24 h. */
  @ApiInt()
  failed_last_24h!: number;
  /** Archived events skipped (no effect: unknown subscription, stale, unhandled type) in the last 24 h. */
  @ApiInt()
  skipped_last_24h!: number;
  /** The oldest event accepted but not yet applied by the worker (null when none waits). */
  @ApiTimestamp({ nullable: true })
  oldest_unprocessed_at!: string | null;
  /** The billing backfill from the provider's event log: where it stopped and its last run (null before). */
  backfill!: WebhookBackfillDto;
}

export class WebhookBackfillDto {
  @ApiProperty({ type: String, nullable: true })
  checkpoint!: string | null;
  @ApiTimestamp({ nullable: true })
  last_run_at!: string | null;
  @ApiProperty({ type: 'integer', nullable: true })
  last_run_processed!: number | null;
}

export class OutboxDto {
  /** Jobs written but not yet pushed to the queue (the relay retries them). */
  @ApiInt()
  pending!: number;
  @ApiTimestamp({ nullable: true })
  oldest_pending_at!: string | null;
}

export class AdminStatsDto {
  @ApiTimestamp()
  generated_at!: string;
  @ApiProperty({
    type: 'object',
    additionalProperties: { $ref: getSchemaPath(TableCountDto) },
    description: 'Row count per table',
  })
  tables!: Record<string, TableCountDto>;
  queues!: QueuesDto;
  @ApiProperty({ type: () => [JobRunDto], description: 'Every scheduled job, by name, also those never run' })
  scheduled_jobs!: JobRunDto[];
  webhooks!: WebhooksDto;
  outbox!: OutboxDto;
}
