import { MetricsService } from '../../infra/metrics/metrics.service.js';
import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { PrismaService } from '../../infra/prisma/prisma.service.js';
import type { EmailMessage, User } from '../../generated/prisma/client.js';
import { EmailRecorder, type StoredBody } from './email-recorder.js';
import { EmailRepository } from './email.repository.js';
import { EmailSendBudget } from './send-budget.js';
import { EmailTemplates } from './email.templates.js';
import type { EmailKind, OutboundEmail, SendEmailJob } from './email.types.js';
import { EmailProvider, EmailSendError } from './providers/email-provider.js';
import { UnsubscribeTokens } from './unsubscribe-tokens.js';
import { EmailSuppressionsRepository } from './deliverability/suppressions.repository.js';
import {
  normalizeAddress,
  type PolicyRecipient,
  type SendContext,
  type SkipReason,
  skipReason,
} from './send-policy.js';

/** The double opt-in e-mail: its confirmation link is signed when it is sent (valid 7 days). */
export const CONFIRM_SUBSCRIPTION_TEMPLATE = 'confirm_subscription';

export type { SkipReason } from './send-policy.js';

export interface SendOutcome {
  status: 'sent' | 'skipped' | 'duplicate' | 'failed';
  reason?: SkipReason | string;
  message?: EmailMessage;
}

export interface ComposeInput {
  templateKey: string;
  idempotencyKey: string;
  data?: Record<string, string | number | boolean>;
  tags?: Record<string, string>;
  /** Add the unsubscribe headers and footer to a non-marketing message too (mail sent under consent). */
  unsubscribe?: boolean;
}

/**
 * Sends one templated e-mail to one user: the send policy (send-policy.ts: never to soft-deleted users or
 * suppressed addresses, marketing only with consent and never to disposable addresses), unsubscribe
 * headers and footer on marketing mail, the provider call with an idempotency key, and the email.sent /
 * email.skipped / email.failed audit entry. Broadcasts gate their pages through `gate()`: one policy.
 */
@Injectable()
export class EmailService {
  private readonly logger = new Logger(EmailService.name);

  constructor(
    private readonly config: AppConfig,
    private readonly prisma: PrismaService,
    private readonly repository: EmailRepository,
    private readonly templates: EmailTemplates,
    private readonly provider: EmailProvider,
    private readonly unsubscribe: UnsubscribeTokens,
    private readonly recorder: EmailRecorder,
    private readonly metrics: MetricsService,
    private readonly budget: EmailSendBudget,
    private readonly suppressions: EmailSuppressionsRepository,
  ) {}

  /**
   * The send policy for a group of recipients (a broadcast page) with one suppression lookup: each
   * recipient's skip reason, or null when the message may go out.
   */
  async gate<R extends PolicyRecipient & { id: string; email: string }>(
    recipients: R[],
    context: SendContext,
  ): Promise<Map<string, SkipReason | null>> {
    const suppressed = await this.suppressions.suppressedAmong(
      this.prisma,
      recipients.map((r) => r.email),
    );
    const out = new Map<string, SkipReason | null>();
    for (const r of recipients) {
      const reason = skipReason(r, context, suppressed.has(normalizeAddress(r.email)));
      if (reason === 'suppressed') this.metrics.emailSuppressedSkips.inc({ kind: context.kind });
      out.set(r.id, reason);
    }
    return out;
  }

  /**
   * `finalAttempt`: the job will not be retried, so a transient provider failure is recorded as failed
   * instead of thrown. A rejection by the provider is final at once.
   */
  async sendTemplate(job: SendEmailJob, options: { finalAttempt?: boolean } = {}): Promise<SendOutcome> {
    const previous = await this.repository.findByIdempotencyKey(this.prisma, job.idempotencyKey);
    if (previous && previous.status !== 'failed') return { status: 'duplicate', message: previous };

    const template = this.templates.get(job.templateKey);
    const user = await this.prisma.user.findUnique({ where: { id: job.userId } });
    const reason = user
      ? (await this.gate([user], { kind: template.kind })).get(user.id)!
      : skipReason(null, { kind: template.kind }, false);
    if (reason || !user) {
      await this.recorder.recordSkip(job, template.kind, reason ?? 'user_not_found', user);
      this.logger.debug({ template: job.templateKey, reason }, 'e-mail skipped');
      return { status: 'skipped', reason: reason ?? 'user_not_found' };
    }

    const message = this.compose(user, this.withLinks(user, job));
    // 1 + EMAIL_SEND_RETRIES provider requests per e-mail in total, whatever the job attempt (issue 13).
    // Nothing left either once the provider's idempotency window has passed (send-budget.ts).
    const budget = await this.budget.state(job.idempotencyKey);
    if (budget.spent) return this.failed(user, job, template.kind, message.subject, budget.spent);
    let providerMessageId: string | null;
    try {
      ({ id: providerMessageId } = await this.provider.send(message, {
        maxRequests: budget.left,
        onRequest: () => this.budget.count(job.idempotencyKey),
      }));
    } catch (err) {
      if (!(err instanceof EmailSendError)) throw err;
      // The provider already took a request under this key (an earlier attempt whose answer was lost,
      // the body having changed since): the message went out then.
      if (err.kind === 'duplicate') providerMessageId = null;
      else if (err.kind !== 'rejected' && !options.finalAttempt && !(await this.budgetSpent(job))) throw err;
      else return this.failed(user, job, template.kind, message.subject, err.message);
    }
    const row = await this.recorder.record(
      user,
      job,
      template.kind,
      message.subject,
      'sent',
      providerMessageId,
      null,
      this.storedBody(message),
    );
    return { status: 'sent', message: row };
  }

  /** Records the e-mail as failed for good (logged, audited by the recorder) and answers the outcome. */
  private async failed(
    user: User,
    job: SendEmailJob,
    kind: EmailKind,
    subject: string,
    error: string,
  ): Promise<SendOutcome> {
    const row = await this.recorder.record(user, job, kind, subject, 'failed', null, error);
    this.logger.warn({ template: job.templateKey, err: error }, 'e-mail failed');
    return { status: 'failed', reason: error, message: row };
  }

  /**
   * Links signed at send time: the double opt-in confirmation (valid 7 days from now), issued when the user
   * asked for it (a job from before `requestedAt` existed, or with an unreadable one: now).
   */
  private withLinks(user: User, job: SendEmailJob): SendEmailJob {
    if (job.templateKey !== CONFIRM_SUBSCRIPTION_TEMPLATE) return job;
    const now = new Date();
    const requested = job.requestedAt === undefined ? NaN : Date.parse(job.requestedAt);
    const requestedAt = Number.isNaN(requested) ? now : new Date(requested);
    const confirmUrl = this.unsubscribe.confirmUrl(user.id, now, requestedAt);
    return { ...job, data: { ...job.data, confirm_url: confirmUrl } };
  }

  /** True when the e-mail has no provider request left: a retry of the job could not send it. */
  private async budgetSpent(job: SendEmailJob): Promise<boolean> {
    return (await this.budget.state(job.idempotencyKey)).spent !== null;
  }

  /** Renders a template for a user, with List-Unsubscribe headers and the footer on marketing mail. */
  compose(
    user: Pick<User, 'id' | 'email' | 'locale'>,
    input: ComposeInput,
  ): OutboundEmail & { kind: EmailKind } {
    const { kind } = this.templates.get(input.templateKey);
    const withUnsubscribe = kind === 'marketing' || input.unsubscribe === true;
    const unsubscribeUrl = withUnsubscribe ? this.unsubscribe.url(user.id) : undefined;
    const { subject, html, text } = this.templates.render(input.templateKey, {
      email: user.email,
      locale: user.locale,
      productName: this.config.project.projectSlug,
      data: input.data ?? {},
      unsubscribeUrl,
    });
    const headers: Record<string, string> = {};
    if (unsubscribeUrl) {
      // RFC 8058: mail clients POST `List-Unsubscribe=One-Click` to this URL.
      headers['List-Unsubscribe'] = `<${unsubscribeUrl}>`;
      headers['List-Unsubscribe-Post'] = 'List-Unsubscribe=One-Click';
    }
    return {
      kind,
      subject,
      html,
      text,
      to: user.email,
      from: this.config.email.from,
      headers,
      idempotencyKey: input.idempotencyKey,
      tags: { template: input.templateKey, kind, ...input.tags },
    };
  }

  storedBody(message: Pick<OutboundEmail, 'html' | 'text'>): StoredBody {
    // Bodies are kept only for the local console provider, where a developer reads them.
    return this.provider.name === 'console'
      ? { html: message.html, text: message.text }
      : { html: null, text: null };
  }
}
