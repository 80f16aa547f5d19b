import { Injectable } from '@nestjs/common';
import { PrismaService } from '../../infra/prisma/prisma.service.js';
import type { User } from '../../generated/prisma/client.js';
import { AuditService, userActor } from '../audit/audit.service.js';
import type { CreateFeedbackDto, FeedbackResponseDto } from './dto/create-feedback.dto.js';
import { FeedbackRepository } from './feedback.repository.js';

/** Feedback rows outlive their author: the user link is set to null when the account is erased. */
@Injectable()
export class FeedbackService {
  constructor(
    private readonly prisma: PrismaService,
    private readonly feedback: FeedbackRepository,
    private readonly audit: AuditService,
  ) {}

  async create(user: User, dto: CreateFeedbackDto): Promise<FeedbackResponseDto> {
    const row = await this.prisma.$transaction(async (tx) => {
      const created = await this.feedback.create(tx, {
        userId: user.id,
        message: dto.message,
        rating: dto.rating ?? null,
        page: dto.page ? dto.page : null,
      });
      await this.audit.record(tx, {
        actor: userActor(user.identityUserId),
        action: 'feedback.created',
        userId: user.identityUserId,
        resourceType: 'feedback',
        resourceId: created.id,
      });
      return created;
    });
    return {
      id: row.id,
      message: row.message,
      rating: row.rating,
      page: row.page,
      created_at: row.createdAt.toISOString(),
    };
  }
}
