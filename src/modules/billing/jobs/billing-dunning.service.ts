import { Injectable, Logger } from '@nestjs/common';
import { z } from 'zod';
import { AppConfig } from '../../../config/app-config.js';
import type { Tx } from '../../../infra/prisma/prisma.service.js';
import { OutboxService } from '../../../infra/queue/outbox.service.js';
import { JOBS } from '../../../infra/queue/queues.js';
import type { Subscription, SubscriptionStatus } from '../../../generated/prisma/client.js';
import { EmailService, type SendOutcome } from '../../email/email.service.js';
import { BillingApiClient } from '../billing-api.client.js';

export type DunningTemplate = 'payment_failed' | 'payment_recovered' | 'subscription_ended';

/** Payload of the billing/dunning-email job. */
export interface DunningEmailJob {
  userId: string;
  providerSubscriptionId: string;
  templateKey: DunningTemplate;
  idempotencyKey: string;
  tier: string;
  /** Paddle's `management_urls.update_payment_method` when the event carried it. */
  updateUrl: string | null;
}

/** Paddle's subscription `management_urls` (present on the API entity; webhooks may omit it). */
const managementUrls = z.looseObject({
  management_urls: z.looseObject({ update_payment_method: z.string().url().max(2000).nullish() }).nullish(),
});

/** The update-payment link of a subscription entity (event data or API answer), or null. */
export function updatePaymentUrlOf(entity: unknown): string | null {
  const parsed = managementUrls.safeParse(entity);
  const url = parsed.success ? parsed.data.management_urls?.update_payment_method : null;
  return url && /^https:\/\//i.test(url) ? url : null;
}

/**
 * Dunning (issue 19 item 3): the state machine calls `onTransition` under the subscription's lock, so a
 * past-due episode is seen to start once however many events (or deliveries) report it. Each e-mail is
 * keyed: payment_failed and payment_recovered on the subscription and the billing period the episode
 * belongs to, subscription_ended on the subscription; the key is both the outbox job id and the e-mail's
 * idempotency key, so a redelivery, a replay or a retried job sends nothing twice.
 */
@Injectable()
export class BillingDunningService {
  private readonly logger = new Logger(BillingDunningService.name);

  constructor(
    private readonly config: AppConfig,
    private readonly outbox: OutboxService,
    private readonly api: BillingApiClient,
    private readonly email: EmailService,
  ) {}

  /** Queues the dunning e-mail of a status change, if any, in the webhook's unit of work. */
  async onTransition(
    tx: Tx,
    previous: SubscriptionStatus | null,
    row: Subscription,
    eventData: unknown,
  ): Promise<void> {
    const template = dunningTemplate(previous, row.status);
    if (!template) return;
    const period = row.currentPeriodStart?.getTime() ?? 0;
    const key =
      template === 'subscription_ended'
        ? `dunning-subscription-ended-${row.id}`
        : `dunning-${template.replace('_', '-')}-${row.id}-${period}`;
    const job: DunningEmailJob = {
      userId: row.userId,
      providerSubscriptionId: row.providerSubscriptionId,
      templateKey: template,
      idempotencyKey: key,
      tier: row.tier,
      updateUrl: template === 'payment_failed' ? updatePaymentUrlOf(eventData) : null,
    };
    await this.outbox.add(tx, JOBS.dunningEmail, job, key);
  }

  /** Worker: sends the e-mail; payment_failed fetches the link from the billing API when needed. */
  async send(job: DunningEmailJob, finalAttempt: boolean): Promise<SendOutcome> {
    const data: Record<string, string> = { tier: job.tier };
    if (job.templateKey === 'payment_failed') data.update_url = await this.updateUrl(job, finalAttempt);
    return this.email.sendTemplate(
      { userId: job.userId, templateKey: job.templateKey, idempotencyKey: job.idempotencyKey, data },
      { finalAttempt },
    );
  }

  /**
   * The event's link, else the provider's subscription entity (GET /subscriptions/{id}). When the provider
   * cannot tell (not configured, or still failing on the job's last attempt) the e-mail still goes out,
   * pointing at the account page: a customer told late is better than one not told.
   */
  private async updateUrl(job: DunningEmailJob, finalAttempt: boolean): Promise<string> {
    if (job.updateUrl) return job.updateUrl;
    try {
      const url = updatePaymentUrlOf(await this.api.subscription(job.providerSubscriptionId));
      if (url) return url;
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (!finalAttempt && code !== 'billing_not_configured') throw err;
      this.logger.warn(
        { subscription_id: job.providerSubscriptionId, err: (err as Error).message },
        'no update-payment link from the billing API; the e-mail links the account page',
      );
    }
    return `${this.config.email.publicBaseUrl}/account/billing`;
  }
}

/** Which dunning e-mail a status change sends (spec: once per past-due episode). */
export function dunningTemplate(
  previous: SubscriptionStatus | null,
  next: SubscriptionStatus,
): DunningTemplate | null {
  if (next === 'PAST_DUE' && previous !== 'PAST_DUE') return 'payment_failed';
  if (previous === 'PAST_DUE' && next === 'ACTIVE') return 'payment_recovered';
  if (previous === 'PAST_DUE' && next === 'CANCELED') return 'subscription_ended';
  return null;
}
