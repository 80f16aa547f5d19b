import { Injectable } from '@nestjs/common';
import type { Db } from '../../infra/prisma/prisma.service.js';
import type { Feedback } from '../../generated/prisma/client.js';

@Injectable()
export class FeedbackRepository {
  create(
    db: Db,
    data: { userId: string; message: string; rating: number | null; page: string | null },
  ): Promise<Feedback> {
    return db.feedback.create({ data });
  }
}
