import { Injectable } from '@nestjs/common';
import type { Db, PrismaService, Tx } from '../../infra/prisma/prisma.service.js';
import type { Prisma, Subscription, User } from '../../generated/prisma/client.js';

export interface AttributionFields {
  utmSource: string | null;
  utmMedium: string | null;
  utmCampaign: string | null;
  utmTerm: string | null;
  utmContent: string | null;
  referrer: string | null;
  landingPage: string | null;
  provenance: string | null;
}

/**
 * Every column of `users` under its model field name. A Record over the model's keys: a column added to
 * the schema without a line here does not compile, so the driver read below returns the same object as
 * Prisma's (test/users/principal-lookup.e2e-spec.ts compares the two on a row with every column set).
 */
const USER_FIELDS: Record<keyof User, string> = {
  id: 'id',
  identityUserId: 'identity_user_id',
  email: 'email',
  emailVerified: 'email_verified',
  identityUpdatedAt: 'identity_updated_at',
  currentTier: 'current_tier',
  creditBalance: 'credit_balance',
  purchasedCredits: 'purchased_credits',
  planGrantJobId: 'plan_grant_job_id',
  planGrantStartsAt: 'plan_grant_starts_at',
  planExpiresAt: 'plan_expires_at',
  planCarriedCredits: 'plan_carried_credits',
  planPeriodJobId: 'plan_period_job_id',
  marketingConsentGiven: 'marketing_consent_given',
  marketingConsentAt: 'marketing_consent_at',
  marketingConsentSource: 'marketing_consent_source',
  locale: 'locale',
  utmSource: 'utm_source',
  utmMedium: 'utm_medium',
  utmCampaign: 'utm_campaign',
  utmTerm: 'utm_term',
  utmContent: 'utm_content',
  referrer: 'referrer',
  landingPage: 'landing_page',
  provenance: 'provenance',
  attributionRecordedAt: 'attribution_recorded_at',
  emailDisposable: 'email_disposable',
  billingCustomerId: 'billing_customer_id',
  lastActiveAt: 'last_active_at',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
  deletedAt: 'deleted_at',
  deletedVia: 'deleted_via',
  adminEmail: 'admin_email',
  adminGrantedAt: 'admin_granted_at',
};

/** Named, so the pool's connections parse it once and reuse the plan (every authenticated request sends it). */
const PRINCIPAL_QUERY = {
  name: 'users_by_identity_id',
  text: `SELECT ${Object.entries(USER_FIELDS)
    .map(([field, column]) => `"${column}" AS "${field}"`)
    .join(', ')} FROM users WHERE identity_user_id = $1`,
};

@Injectable()
export class UsersRepository {
  findById(db: Db, id: string): Promise<User | null> {
    return db.user.findUnique({ where: { id } });
  }

  findByIdentityId(db: Db, identityUserId: string): Promise<User | null> {
    return db.user.findUnique({ where: { identityUserId } });
  }

  /**
   * The same read as findByIdentityId outside a transaction, on the driver: the principal of every
   * authenticated request. Through Prisma's client the one statement cost about 0.5 ms of API CPU, through
   * `pg` about a fifth of that (issue 15 item 6; the ledger's one statement is the precedent).
   */
  async findPrincipal(prisma: PrismaService, identityUserId: string): Promise<User | null> {
    const { rows } = await prisma.pool.query<User>({ ...PRINCIPAL_QUERY, values: [identityUserId] });
    return rows[0] ?? null;
  }

  /** Locks the row until the caller's transaction ends, so read-compare-write cannot interleave. */
  async lockById(tx: Tx, id: string): Promise<User | null> {
    const rows = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM users WHERE id = ${id}::uuid FOR UPDATE`;
    return rows.length === 0 ? null : tx.user.findUnique({ where: { id } });
  }

  async lockByIdentityId(tx: Tx, identityUserId: string): Promise<User | null> {
    const rows = await tx.$queryRaw<{ id: string }[]>`
      SELECT id FROM users WHERE identity_user_id = ${identityUserId} FOR UPDATE`;
    return rows.length === 0 ? null : tx.user.findUnique({ where: { id: rows[0].id } });
  }

  /**
   * Serializes the paths that create or delete the row of one identity user (the just-in-time creation, the
   * identity webhook's user.created and user.deleted) until the caller's transaction ends, so each one's
   * reads (the archive's deletions, the user row) see what the other committed. An advisory lock rather
   * than a row lock because the row may not exist yet; key `identity-user:<identity id>`, the scheme of the
   * billing locks (SubscriptionsRepository.lock).
   */
  async lockIdentity(tx: Tx, identityUserId: string): Promise<void> {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`identity-user:${identityUserId}`}, 0))`;
  }

  /**
   * lockIdentity for several identities at once, in the order of the lock keys: two transactions that each
   * apply a batch of identity events naming the same identities in opposite orders take them in one order,
   * so neither holds one while waiting for the other's (a deadlock, which rolled a batch back to be applied
   * event by event). The handlers' own lockIdentity calls then find the locks held.
   */
  async lockIdentities(tx: Tx, identityUserIds: readonly string[]): Promise<void> {
    if (identityUserIds.length === 0) return;
    await tx.$queryRaw`
      SELECT count(pg_advisory_xact_lock(k)) FROM (
        SELECT DISTINCT hashtextextended('identity-user:' || id, 0) AS k
        FROM unnest(${[...identityUserIds]}::text[]) AS id
        ORDER BY k) AS keys`;
  }

  /**
   * Inserts the user unless a row with this identity id exists. Concurrent callers (the identity webhook
   * and a just-in-time token) end with one row; exactly one of them sees `inserted: true`.
   */
  async insertIfAbsent(
    db: Db,
    identityUserId: string,
    email: string,
    emailVerified: boolean,
    identityUpdatedAt: Date | null = null,
  ): Promise<{ user: User; inserted: boolean }> {
    const rows = await db.$queryRaw<{ id: string }[]>`
      INSERT INTO users (id, identity_user_id, email, email_verified, identity_updated_at)
      VALUES (gen_random_uuid(), ${identityUserId}, ${email}, ${emailVerified}, ${identityUpdatedAt})
      ON CONFLICT (identity_user_id) DO NOTHING
      RETURNING id`;
    const user = await db.user.findUniqueOrThrow({ where: { identityUserId } });
    return { user, inserted: rows.length === 1 };
  }

  /**
   * Records that the identity provider verified the address stored now (a token's email_verified: true
   * for this very address); conditional, so it writes once.
   */
  async markEmailVerified(db: Db, id: string, email: string): Promise<void> {
    await db.user.updateMany({ where: { id, email, emailVerified: false }, data: { emailVerified: true } });
  }

  update(db: Db, id: string, data: Prisma.UserUpdateInput): Promise<User> {
    return db.user.update({ where: { id }, data });
  }

  addConsentEvent(db: Db, userId: string, given: boolean, source: string, at: Date): Promise<unknown> {
    return db.emailConsentEvent.create({ data: { userId, given, source, createdAt: at } });
  }

  /**
   * Withdraws marketing consent when it is given (the unsubscribe link); returns the user when this call
   * changed it, null when there was nothing to change (already withdrawn, or no such user). Conditional,
   * so concurrent clicks record one withdrawal. With `onlyIfGivenBefore` (a provider's event that happened
   * at `at`, possibly applied days later), a consent given after `at` is newer and stays: null too.
   */
  async withdrawMarketingConsent(
    db: Db,
    userId: string,
    source: string,
    at: Date,
    options: { onlyIfGivenBefore?: boolean } = {},
  ): Promise<User | null> {
    const { count } = await db.user.updateMany({
      where: {
        id: userId,
        marketingConsentGiven: true,
        ...(options.onlyIfGivenBefore
          ? { OR: [{ marketingConsentAt: null }, { marketingConsentAt: { lte: at } }] }
          : {}),
      },
      data: { marketingConsentGiven: false, marketingConsentAt: at, marketingConsentSource: source },
    });
    if (count === 0) return null;
    await this.addConsentEvent(db, userId, false, source, at);
    return db.user.findUnique({ where: { id: userId } });
  }

  /**
   * Gives marketing consent when it is not given (the double opt-in confirmation); returns the user when
   * this call changed it, null otherwise. Conditional, so two clicks record one grant. With `requestedAt`
   * (when the user asked for this consent), a withdrawal recorded after it is the user's later decision and
   * stays: null too (`withdrawnAfter` tells that case apart).
   */
  async grantMarketingConsent(
    db: Db,
    userId: string,
    source: string,
    at: Date,
    options: { requestedAt?: Date } = {},
  ): Promise<User | null> {
    const { count } = await db.user.updateMany({
      where: {
        id: userId,
        marketingConsentGiven: false,
        deletedAt: null,
        // Not given: marketing_consent_at is the latest withdrawal (null: consent was never given).
        ...(options.requestedAt
          ? { OR: [{ marketingConsentAt: null }, { marketingConsentAt: { lte: options.requestedAt } }] }
          : {}),
      },
      data: { marketingConsentGiven: true, marketingConsentAt: at, marketingConsentSource: source },
    });
    if (count === 0) return null;
    await this.addConsentEvent(db, userId, true, source, at);
    return db.user.findUnique({ where: { id: userId } });
  }

  /** Users whose address is this one (case-insensitive): a complaint about mail we cannot tie to a row. */
  usersWithAddress(db: Db, address: string): Promise<Pick<User, 'id' | 'identityUserId'>[]> {
    return db.$queryRaw<Pick<User, 'id' | 'identityUserId'>[]>`
      SELECT id::text, identity_user_id AS "identityUserId" FROM users
      WHERE lower(email) = ${address.trim().toLowerCase()} LIMIT 10`;
  }

  /** The identity id of the one user with this address (any case); null when none or several have it. */
  async soleIdentityWithAddress(db: Db, address: string): Promise<string | null> {
    const users = await this.usersWithAddress(db, address);
    return users.length === 1 ? users[0].identityUserId : null;
  }

  async identityUserIdOf(db: Db, userId: string): Promise<string | null> {
    const user = await db.user.findUnique({ where: { id: userId }, select: { identityUserId: true } });
    return user?.identityUserId ?? null;
  }

  /**
   * Whether the user's consent stands withdrawn by a decision recorded after `instant` (any source: the
   * unsubscribe link, PATCH /me, a complaint): a confirmation asked for at `instant` must not undo it.
   */
  async withdrawnAfter(db: Db, userId: string, instant: Date): Promise<boolean> {
    const count = await db.user.count({
      where: { id: userId, marketingConsentGiven: false, marketingConsentAt: { gt: instant } },
    });
    return count > 0;
  }

  /** The user's identity id and marketing consent as they stand; null when there is no such user. */
  consentOf(
    db: Db,
    userId: string,
  ): Promise<Pick<User, 'identityUserId' | 'marketingConsentGiven' | 'marketingConsentAt'> | null> {
    return db.user.findUnique({
      where: { id: userId },
      select: { identityUserId: true, marketingConsentGiven: true, marketingConsentAt: true },
    });
  }

  /**
   * First-touch attribution in one conditional UPDATE: of two concurrent first calls, the second waits
   * for the first's row lock, re-checks the condition and matches nothing. Returns whether it applied.
   */
  async recordAttributionOnce(db: Db, id: string, fields: AttributionFields, at: Date): Promise<boolean> {
    const { count } = await db.user.updateMany({
      where: { id, attributionRecordedAt: null },
      data: { ...fields, attributionRecordedAt: at },
    });
    return count === 1;
  }

  /** The subscription /me shows: the newest one the user has (billing keeps at most one live). */
  latestSubscription(db: Db, userId: string): Promise<Subscription | null> {
    return db.subscription.findFirst({
      where: { userId },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    });
  }

  /**
   * Locks the next account whose grace period is over, skipping rows another worker holds, so several
   * workers share the backlog without waiting on (or deleting) the same user twice.
   */
  async lockNextDueForHardDelete(
    tx: Tx,
    cutoff: Date,
    exclude: string[],
  ): Promise<{ id: string; identity_user_id: string; deleted_at: Date } | null> {
    const rows = await tx.$queryRaw<{ id: string; identity_user_id: string; deleted_at: Date }[]>`
      SELECT id, identity_user_id, deleted_at FROM users
      WHERE deleted_at IS NOT NULL AND deleted_at <= ${cutoff}
        AND NOT (id = ANY(${exclude}::uuid[]))
      ORDER BY deleted_at, id
      LIMIT 1
      FOR UPDATE SKIP LOCKED`;
    return rows[0] ?? null;
  }

  /**
   * What ties the e-mail provider's events to the user (for the archive scrub of the hard delete): the
   * provider ids of the messages sent to them and every address they were sent to, plus the current one,
   * as stored (the scrub normalizes both sides). Read before the delete, whose cascade removes the
   * messages.
   */
  async emailTrailOf(tx: Tx, id: string): Promise<{ messageIds: string[]; addresses: string[] }> {
    const [row] = await tx.$queryRaw<{ message_ids: string[]; addresses: string[] }[]>`
      SELECT
        ARRAY(SELECT DISTINCT provider_message_id FROM email_messages
              WHERE user_id = ${id}::uuid AND provider_message_id IS NOT NULL) AS message_ids,
        ARRAY(SELECT email FROM users WHERE id = ${id}::uuid
              UNION SELECT to_address FROM email_messages WHERE user_id = ${id}::uuid) AS addresses`;
    return { messageIds: row?.message_ids ?? [], addresses: row?.addresses ?? [] };
  }

  /**
   * The billing provider's customer ids of the user (the linked one and those of the user's subscriptions)
   * that no other account holds, for the archive scrub of the hard delete: two accounts with one address can
   * share a provider customer, and the other's events must stay. Read before the delete.
   */
  async exclusiveBillingCustomersOf(tx: Tx, id: string): Promise<string[]> {
    const rows = await tx.$queryRaw<{ customer_id: string }[]>`
      SELECT k.customer_id FROM (
        SELECT billing_customer_id AS customer_id FROM users WHERE id = ${id}::uuid
        UNION SELECT provider_customer_id FROM subscriptions WHERE user_id = ${id}::uuid) k
      WHERE k.customer_id IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM users u
                        WHERE u.billing_customer_id = k.customer_id AND u.id <> ${id}::uuid)
        AND NOT EXISTS (SELECT 1 FROM subscriptions s
                        WHERE s.provider_customer_id = k.customer_id AND s.user_id <> ${id}::uuid)`;
    return rows.map((row) => row.customer_id);
  }

  /** Deletes the row; the database cascades owned tables and nulls the links of the kept ones. */
  async hardDelete(tx: Tx, id: string): Promise<void> {
    await tx.$executeRaw`DELETE FROM users WHERE id = ${id}::uuid`;
  }

  /** Marks activity at most once an hour per user (a conditional update, no write otherwise). */
  async touchLastActive(db: Db, id: string): Promise<void> {
    await db.$executeRaw`
      UPDATE users SET last_active_at = now()
      WHERE id = ${id}::uuid AND (last_active_at IS NULL OR last_active_at < now() - interval '1 hour')`;
  }
}
