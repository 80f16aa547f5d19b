import { Body, Controller, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentUser } from '../../common/decorators/current-user.decorator.js';
import type { User } from '../../generated/prisma/client.js';
import { CreateFeedbackDto, FeedbackResponseDto } from './dto/create-feedback.dto.js';
import { FeedbackService } from './feedback.service.js';

@ApiTags('feedback')
@ApiBearerAuth()
@Controller('feedback')
export class FeedbackController {
  constructor(private readonly feedback: FeedbackService) {}

  /** In-app feedback: message 1..5000, optional rating 1..5 and page. */
  @ApiOperation({
    summary: 'Send feedback',
    description: 'In-app feedback: message 1..5000 characters, optional rating 1..5 and page.',
  })
  @Post()
  @ApiCreatedResponse({ type: FeedbackResponseDto })
  create(@CurrentUser() user: User, @Body() dto: CreateFeedbackDto): Promise<FeedbackResponseDto> {
    return this.feedback.create(user, dto);
  }
}
