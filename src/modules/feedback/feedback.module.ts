import { Module } from '@nestjs/common';
import { FeedbackRepository } from './feedback.repository.js';
import { FeedbackService } from './feedback.service.js';

@Module({ providers: [FeedbackService, FeedbackRepository], exports: [FeedbackService] })
export class FeedbackModule {}
