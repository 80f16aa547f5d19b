import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { PrismaService } from '../../infra/prisma/prisma.service.js';
import type { EmailMessage, User } from '../../generated/prisma/client.js';
import { AuditService, systemActor } from '../audit/audit.service.js';
import { EmailRepository } from './email.repository.js';
import { EmailTemplates } from './email.templates.js';
import type { EmailKind, OutboundEmail, SendEmailJob } from './email.types.js';
import { EmailProvider } from './providers/email-provider.js';
import { UnsubscribeTokens } from './unsubscribe-tokens.js';

export type SkipReason = 'no_consent' | 'user_deleted' | 'disposable_address' | 'user_not_found';

export interface SendOutcome {
  status: 'sent' | 'skipped' | 'duplicate';
  reason?: SkipReason;
  message?: EmailMessage;
}

/**
 * Sends one templated e-mail to one user: the consent gate (marketing only with consent, never to
 * soft-deleted users or disposable addresses), unsubscribe headers and footer on marketing mail, the
 * provider call with an idempotency key, and the email.sent / email.skipped audit entry.
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
    private readonly audit: AuditService,
  ) {}

  /** Why a user must not receive an e-mail of this kind, or null when they may. */
  skipReason(user: User | null, kind: EmailKind, bypassConsent = false): SkipReason | null {
    if (!user) return 'user_not_found';
    if (user.deletedAt) return 'user_deleted';
    if (kind === 'marketing') {
      if (user.emailDisposable) return 'disposable_address';
      if (!user.marketingConsentGiven && !bypassConsent) return 'no_consent';
    }
    return null;
  }

  async sendTemplate(job: SendEmailJob): Promise<SendOutcome> {
    const previous = await this.repository.findByIdempotencyKey(this.prisma, job.idempotencyKey);
    if (previous && previous.status !== 'failed') return { status: 'duplicate', message: previous };

    const template = this.templates.get(job.templateKey);
    const user = await this.prisma.user.findUnique({ where: { id: job.userId } });
    const reason = this.skipReason(user, template.kind);
    if (reason || !user) {
      await this.recordSkip(job, template.kind, reason ?? 'user_not_found', user);
      return { status: 'skipped', reason: reason ?? 'user_not_found' };
    }

    const message = this.compose(user, template.kind, job);
    const { id } = await this.provider.send(message);
    const row = await this.repository.record(this.prisma, {
      userId: user.id,
      toAddress: user.email,
      templateKey: job.templateKey,
      kind: template.kind,
      subject: message.subject,
      status: 'sent',
      idempotencyKey: job.idempotencyKey,
      providerMessageId: id,
      // Bodies are kept only for the local console provider, where a developer reads them.
      html: this.provider.name === 'console' ? message.html : null,
      text: this.provider.name === 'console' ? message.text : null,
    });
    await this.audit.record(null, {
      actor: systemActor('email'),
      action: 'email.sent',
      userId: user.identityUserId,
      resourceType: 'email',
      resourceId: row.id,
      details: { template: job.templateKey, kind: template.kind },
    });
    return { status: 'sent', message: row };
  }

  /** Renders a template for a user, with List-Unsubscribe headers and footer on marketing mail. */
  compose(
    user: User,
    kind: EmailKind,
    job: Pick<SendEmailJob, 'templateKey' | 'idempotencyKey' | 'data'>,
  ): OutboundEmail {
    const rendered = this.templates.get(job.templateKey).render({
      email: user.email,
      locale: user.locale,
      productName: this.config.project.projectSlug,
      data: job.data ?? {},
    });
    const headers: Record<string, string> = {};
    if (kind === 'marketing') {
      const url = this.unsubscribe.url(user.id);
      headers['List-Unsubscribe'] = `<${url}>`;
      headers['List-Unsubscribe-Post'] = 'List-Unsubscribe=One-Click';
      rendered.text += `\n\nUnsubscribe: ${url}`;
      rendered.html = rendered.html.replace(
        '</body>',
        `<p style="font-size:12px;color:#666">Don't want these e-mails? <a href="${url}">Unsubscribe</a>.</p></body>`,
      );
    }
    return {
      ...rendered,
      to: user.email,
      from: this.config.email.from,
      headers,
      idempotencyKey: job.idempotencyKey,
    };
  }

  private async recordSkip(
    job: SendEmailJob,
    kind: EmailKind,
    reason: SkipReason,
    user: User | null,
  ): Promise<void> {
    const row = user
      ? await this.repository.record(this.prisma, {
          userId: user.id,
          toAddress: user.email,
          templateKey: job.templateKey,
          kind,
          subject: '',
          status: 'skipped',
          reason,
          idempotencyKey: job.idempotencyKey,
        })
      : null;
    await this.audit.record(null, {
      actor: systemActor('email'),
      action: 'email.skipped',
      userId: user && !user.deletedAt ? user.identityUserId : (user?.identityUserId ?? null),
      resourceType: 'email',
      resourceId: row?.id ?? null,
      details: { template: job.templateKey, kind, reason },
    });
    this.logger.debug({ template: job.templateKey, reason }, 'e-mail skipped');
  }
}
