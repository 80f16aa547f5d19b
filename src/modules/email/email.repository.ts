import { Injectable } from '@nestjs/common';
import type { Db } from '../../infra/prisma/prisma.service.js';
import type { EmailMessage, Prisma } from '../../generated/prisma/client.js';

@Injectable()
export class EmailRepository {
  findByIdempotencyKey(db: Db, idempotencyKey: string): Promise<EmailMessage | null> {
    return db.emailMessage.findUnique({ where: { idempotencyKey } });
  }

  /** One row per logical e-mail: a retry after a failure overwrites the failed row. */
  record(db: Db, data: Prisma.EmailMessageUncheckedCreateInput): Promise<EmailMessage> {
    const { idempotencyKey, ...rest } = data;
    return db.emailMessage.upsert({ where: { idempotencyKey }, create: data, update: rest });
  }
}
