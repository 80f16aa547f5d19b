import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { PrismaService } from '../../infra/prisma/prisma.service.js';
import { WebhookInboxRepository } from './webhook-inbox.repository.js';

const DAY_MS = 86_400_000;

/**
 * Daily retention of the webhook archive (all providers: it is one table). Raw payloads go after
 * WEBHOOK_ARCHIVE_RETENTION_DAYS (90); the processed-event ids that make redelivery a no-op are kept
 * for PROCESSED_WEBHOOK_RETENTION_DAYS (never shorter than the archive), so a late replay is still
 * recognised after its payload is gone.
 */
@Injectable()
export class WebhookRetentionService {
  private readonly logger = new Logger(WebhookRetentionService.name);

  constructor(
    private readonly config: AppConfig,
    private readonly prisma: PrismaService,
    private readonly archive: WebhookInboxRepository,
  ) {}

  async prune(now: Date = new Date()): Promise<{ archive: number; processed: number }> {
    const { webhookArchiveDays, processedWebhookDays } = this.config.retention;
    const archive = await this.archive.pruneArchive(
      this.prisma,
      new Date(now.getTime() - webhookArchiveDays * DAY_MS),
    );
    const processed = await this.archive.pruneProcessed(
      this.prisma,
      new Date(now.getTime() - Math.max(processedWebhookDays, webhookArchiveDays) * DAY_MS),
    );
    this.logger.log({ archive, processed }, 'webhook archive pruned');
    return { archive, processed };
  }
}
