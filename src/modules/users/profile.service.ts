import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { NotFoundError, ValidationError } from '../../common/errors/app-error.js';
import { canonicalLocale } from '../../common/validation/locale.js';
import { PrismaService, type Tx } from '../../infra/prisma/prisma.service.js';
import { Prisma, type Subscription, type User } from '../../generated/prisma/client.js';
import { AuditService, userActor } from '../audit/audit.service.js';
import { UnitOfWork } from '../../infra/prisma/unit-of-work.js';
import { OutboxService } from '../../infra/queue/outbox.service.js';
import { JOBS } from '../../infra/queue/queues.js';
import type { SendEmailJob } from '../email/email.types.js';
import type { MeResponseDto } from './dto/me-response.dto.js';
import type { SignupMetadataDto } from './dto/signup-metadata.dto.js';
import type { UpdateMeDto } from './dto/update-me.dto.js';
import { type AttributionFields, UsersRepository } from './users.repository.js';

export const DEFAULT_CONSENT_SOURCE = 'account_settings';
/** The double opt-in e-mail (email/ signs its link when it sends it). */
const CONFIRM_SUBSCRIPTION_TEMPLATE = 'confirm_subscription';
const DAY_MS = 86_400_000;

/** The current user's own profile: /me, its two mutable settings, and first-touch attribution. */
@Injectable()
export class ProfileService {
  constructor(
    private readonly config: AppConfig,
    private readonly prisma: PrismaService,
    private readonly users: UsersRepository,
    private readonly audit: AuditService,
    private readonly outbox: OutboxService,
    private readonly uow: UnitOfWork,
  ) {}

  async me(userId: string): Promise<MeResponseDto> {
    // One snapshot: read separately, a webhook committing in between showed the new tier without its
    // subscription and credits.
    const { user, subscription } = await this.prisma.$transaction(
      async (tx) => ({
        user: await this.users.findById(tx, userId),
        subscription: await this.users.latestSubscription(tx, userId),
      }),
      { isolationLevel: Prisma.TransactionIsolationLevel.RepeatableRead },
    );
    if (!user) throw new NotFoundError('The user does not exist.', 'user_not_found');
    return this.toResponse(user, subscription);
  }

  /**
   * Changes locale and/or marketing consent. A consent change stamps at/source, appends to the consent
   * history and is audited with `fields_changed`; values equal to the stored ones change nothing.
   */
  async update(actor: User, dto: UpdateMeDto): Promise<MeResponseDto> {
    if (dto.marketing_consent_source !== undefined && dto.marketing_consent_given === undefined) {
      throw new ValidationError('marketing_consent_source is only accepted with marketing_consent_given.', [
        { field: 'marketing_consent_source', message: 'requires marketing_consent_given' },
      ]);
    }
    const locale = dto.locale === undefined ? undefined : this.localeOf(dto.locale);
    await this.uow.run(async (tx) => {
      const user = await this.users.lockById(tx, actor.id);
      if (!user) throw new NotFoundError('The user does not exist.', 'user_not_found');
      const data: Prisma.UserUpdateInput = {};
      const changed: string[] = [];
      if (locale !== undefined && locale !== user.locale) {
        data.locale = locale;
        changed.push('locale');
      }
      const now = new Date();
      const source = dto.marketing_consent_source ?? DEFAULT_CONSENT_SOURCE;
      // Double opt-in: giving consent only sends the confirm_subscription e-mail; consent becomes true
      // when its signed link is POSTed (email/subscription-confirm.service.ts). Withdrawing is immediate.
      const confirmFirst =
        this.config.email.doubleOptIn && dto.marketing_consent_given === true && !user.marketingConsentGiven;
      if (confirmFirst) await this.requestConfirmation(tx, user, source, now);
      const consentChanged =
        !confirmFirst &&
        dto.marketing_consent_given !== undefined &&
        dto.marketing_consent_given !== user.marketingConsentGiven;
      if (consentChanged) {
        data.marketingConsentGiven = dto.marketing_consent_given;
        data.marketingConsentAt = now;
        data.marketingConsentSource = source;
        changed.push('marketing_consent_at', 'marketing_consent_given', 'marketing_consent_source');
      }
      if (changed.length === 0) return;
      await this.users.update(tx, user.id, data);
      if (consentChanged)
        await this.users.addConsentEvent(tx, user.id, dto.marketing_consent_given!, source, now);
      await this.audit.record(tx, {
        actor: userActor(user.identityUserId),
        action: 'user.updated',
        userId: user.identityUserId,
        resourceType: 'user',
        resourceId: user.id,
        details: {
          fields_changed: changed.sort(),
          ...(locale !== undefined && changed.includes('locale') ? { locale } : {}),
          ...(consentChanged
            ? { consent_given: dto.marketing_consent_given!, consent_at: now.toISOString(), source }
            : {}),
        },
      });
    });
    return this.me(actor.id);
  }

  /** The locale as stored (canonicalLocale: canonical case, aliases replaced); the DTO has refused the rest. */
  private localeOf(tag: string): string {
    const locale = canonicalLocale(tag);
    if (locale === null) {
      throw new ValidationError('locale must be a BCP 47 language tag such as en or de-CH', [
        { field: 'locale', message: 'locale must be a BCP 47 language tag such as en or de-CH' },
      ]);
    }
    return locale;
  }

  /**
   * The confirmation e-mail of a double opt-in, at most one per user and UTC day between two withdrawals
   * (a user who clicks the checkbox repeatedly gets one e-mail), audited `email.confirmation_requested`.
   * Its link carries this request's time: a withdrawal after it voids the link, so a request after a
   * withdrawal (consent not given: marketing_consent_at is the latest one) is a new e-mail, the same day too.
   * The request follows the withdrawal it read, whatever the clock that stamped it said (another instance's,
   * or the provider's for a complaint): its time is never earlier.
   */
  private async requestConfirmation(tx: Tx, user: User, source: string, now: Date): Promise<void> {
    const withdrawnAt = user.marketingConsentAt;
    const day = now.toISOString().slice(0, 10);
    const key = `confirm-subscription-${user.id}-${day}${withdrawnAt ? `-${withdrawnAt.getTime()}` : ''}`;
    const requestedAt = new Date(Math.max(now.getTime(), withdrawnAt?.getTime() ?? 0));
    await this.audit.record(tx, {
      actor: userActor(user.identityUserId),
      action: 'email.confirmation_requested',
      userId: user.identityUserId,
      resourceType: 'user',
      resourceId: user.id,
      details: { template: CONFIRM_SUBSCRIPTION_TEMPLATE, source },
    });
    await this.outbox.add(
      tx,
      JOBS.sendEmail,
      {
        userId: user.id,
        templateKey: CONFIRM_SUBSCRIPTION_TEMPLATE,
        idempotencyKey: key,
        requestedAt: requestedAt.toISOString(),
      } satisfies SendEmailJob,
      key,
    );
  }

  /** Records first-touch attribution once; later calls answer false and change nothing. */
  async recordAttribution(actor: User, dto: SignupMetadataDto): Promise<{ recorded: boolean }> {
    const clean = (value: string | undefined) => {
      const trimmed = value?.trim();
      return trimmed ? trimmed : null;
    };
    const fields: AttributionFields = {
      utmSource: clean(dto.utm_source),
      utmMedium: clean(dto.utm_medium),
      utmCampaign: clean(dto.utm_campaign),
      utmTerm: clean(dto.utm_term),
      utmContent: clean(dto.utm_content),
      referrer: clean(dto.referrer),
      landingPage: clean(dto.landing_page),
      provenance: clean(dto.provenance),
    };
    return this.prisma.$transaction(async (tx) => {
      const recorded = await this.users.recordAttributionOnce(tx, actor.id, fields, new Date());
      if (recorded) {
        const given = Object.entries(dto)
          .filter(([, value]) => typeof value === 'string' && value.trim() !== '')
          .map(([key]) => key);
        await this.audit.record(tx, {
          actor: userActor(actor.identityUserId),
          action: 'user.attribution_recorded',
          userId: actor.identityUserId,
          resourceType: 'user',
          resourceId: actor.id,
          // Names only: the values are visitor-supplied and stay in the user row.
          details: { fields_changed: given.sort() },
        });
      }
      return { recorded };
    });
  }

  hardDeleteAfter(deletedAt: Date): Date {
    return new Date(deletedAt.getTime() + this.config.retention.accountDeletionGraceDays * DAY_MS);
  }

  private toResponse(user: User, subscription: Subscription | null): MeResponseDto {
    return {
      id: user.id,
      identity_user_id: user.identityUserId,
      email: user.email,
      current_tier: user.currentTier,
      credit_balance: user.creditBalance,
      marketing_consent_given: user.marketingConsentGiven,
      marketing_consent_at: user.marketingConsentAt?.toISOString() ?? null,
      marketing_consent_source: user.marketingConsentSource,
      locale: user.locale,
      attribution_recorded: user.attributionRecordedAt !== null,
      deleted_at: user.deletedAt?.toISOString() ?? null,
      hard_delete_after: user.deletedAt ? this.hardDeleteAfter(user.deletedAt).toISOString() : null,
      created_at: user.createdAt.toISOString(),
      subscription: subscription
        ? {
            status: subscription.status,
            current_period_end: subscription.currentPeriodEnd?.toISOString() ?? null,
            canceled_at: subscription.canceledAt?.toISOString() ?? null,
          }
        : null,
    };
  }
}
