import { Module } from '@nestjs/common';
import { FeedbackController } from './feedback.controller.js';
import { FeedbackModule } from './feedback.module.js';

@Module({ imports: [FeedbackModule], controllers: [FeedbackController] })
export class FeedbackHttpModule {}
