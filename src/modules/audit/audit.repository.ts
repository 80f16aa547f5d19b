import { Injectable } from '@nestjs/common';
import type { Db } from '../../infra/prisma/prisma.service.js';
import type { Prisma } from '../../generated/prisma/client.js';

@Injectable()
export class AuditRepository {
  insert(db: Db, data: Prisma.AuditLogUncheckedCreateInput) {
    return db.auditLog.create({ data, select: { id: true } });
  }
}
