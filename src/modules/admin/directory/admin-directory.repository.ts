import { Injectable } from '@nestjs/common';
import { PrismaService } from '../../../infra/prisma/prisma.service.js';
import type { AuditLog, Prisma, User } from '../../../generated/prisma/client.js';

export interface PageWindow {
  skip: number;
  take: number;
}

/** LIKE wildcards in a user-typed prefix are literal characters. */
const escapeLike = (value: string) => value.replace(/[\\%_]/g, (c) => `\\${c}`);

@Injectable()
export class AdminDirectoryRepository {
  constructor(private readonly prisma: PrismaService) {}

  async users(
    filter: { emailPrefix?: string; tier?: string; deleted?: boolean },
    window: PageWindow,
  ): Promise<{ rows: User[]; total: number }> {
    const where: Prisma.UserWhereInput = {
      ...(filter.emailPrefix
        ? { email: { startsWith: escapeLike(filter.emailPrefix), mode: 'insensitive' } }
        : {}),
      ...(filter.tier ? { currentTier: filter.tier } : {}),
      ...(filter.deleted === undefined ? {} : { deletedAt: filter.deleted ? { not: null } : null }),
    };
    const [rows, total] = await this.prisma.$transaction([
      this.prisma.user.findMany({
        where,
        orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
        skip: window.skip,
        take: window.take,
      }),
      this.prisma.user.count({ where }),
    ]);
    return { rows, total };
  }

  async audit(
    filter: {
      action?: string;
      actor?: string;
      userId?: string;
      resourceType?: string;
      from?: Date;
      to?: Date;
    },
    window: PageWindow,
  ): Promise<{ rows: AuditLog[]; total: number }> {
    const where: Prisma.AuditLogWhereInput = {
      ...(filter.action ? { action: filter.action } : {}),
      ...(filter.actor ? { actor: filter.actor } : {}),
      ...(filter.userId ? { userId: filter.userId } : {}),
      ...(filter.resourceType ? { resourceType: filter.resourceType } : {}),
      ...(filter.from || filter.to
        ? {
            createdAt: {
              ...(filter.from ? { gte: filter.from } : {}),
              ...(filter.to ? { lte: filter.to } : {}),
            },
          }
        : {}),
    };
    const [rows, total] = await this.prisma.$transaction([
      this.prisma.auditLog.findMany({
        where,
        orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
        skip: window.skip,
        take: window.take,
      }),
      this.prisma.auditLog.count({ where }),
    ]);
    return { rows, total };
  }
}
