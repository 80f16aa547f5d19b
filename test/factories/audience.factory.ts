import { randomBytes } from 'node:crypto';
import type { PrismaService } from '../../src/infra/prisma/prisma.service.js';
import type { User } from '../../src/generated/prisma/client.js';

export interface AudienceMemberOptions {
  consent?: boolean;
  tier?: string;
  locale?: string;
  deleted?: boolean;
  disposable?: boolean;
  createdAt?: Date;
  /** Address domain (default example.com). */
  domain?: string;
}

/** `count` users with generated ids and addresses `<label>-<n>-<random>@<domain>`, inserted in one statement. */
export async function createAudience(
  prisma: PrismaService,
  label: string,
  count: number,
  options: AudienceMemberOptions = {},
): Promise<User[]> {
  const tag = randomBytes(3).toString('hex');
  const rows = Array.from({ length: count }, (_, i) => ({
    identityUserId: `user_${label}_${tag}_${i}`,
    email: `${label}-${i}-${tag}@${options.domain ?? 'example.com'}`,
    marketingConsentGiven: options.consent ?? false,
    marketingConsentAt: options.consent ? new Date() : null,
    marketingConsentSource: options.consent ? 'signup_form' : null,
    currentTier: options.tier ?? 'FREE',
    locale: options.locale ?? 'en',
    emailDisposable: options.disposable ?? false,
    deletedAt: options.deleted ? new Date() : null,
    createdAt: options.createdAt ?? new Date(),
  }));
  // Array parameters: Prisma's createMany spends seconds of CPU on a thousand rows.
  const col = <K extends keyof (typeof rows)[number]>(key: K) => rows.map((row) => row[key]);
  await prisma.$executeRaw`
    INSERT INTO users (id, identity_user_id, email, marketing_consent_given, marketing_consent_at,
      marketing_consent_source, current_tier, locale, email_disposable, deleted_at, created_at)
    SELECT gen_random_uuid(), *
    FROM unnest(${col('identityUserId')}::text[], ${col('email')}::text[], ${col('marketingConsentGiven')}::boolean[],
      ${col('marketingConsentAt')}::timestamptz[], ${col('marketingConsentSource')}::text[], ${col('currentTier')}::text[],
      ${col('locale')}::text[], ${col('emailDisposable')}::boolean[], ${col('deletedAt')}::timestamptz[],
      ${col('createdAt')}::timestamptz[])`;
  return prisma.user.findMany({
    where: { identityUserId: { in: rows.map((r) => r.identityUserId) } },
    orderBy: { id: 'asc' },
  });
}

export const createMember = async (
  prisma: PrismaService,
  label: string,
  options: AudienceMemberOptions = {},
) => (await createAudience(prisma, label, 1, options))[0];
