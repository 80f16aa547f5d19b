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
    ...(options.createdAt ? { createdAt: options.createdAt } : {}),
  }));
  await prisma.user.createMany({ data: rows });
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
