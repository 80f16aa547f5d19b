import { Module } from '@nestjs/common';
import { CreditsModule } from '../credits/credits.module.js';
import { AiController } from './ai.controller.js';
import { AiRateLimiter } from './ai-rate-limiter.js';
import { CompletionsService } from './completions.service.js';
import { ReplayStore } from './idempotency.js';
import { LlmClient } from './llm.client.js';

@Module({
  imports: [CreditsModule],
  controllers: [AiController],
  providers: [CompletionsService, LlmClient, AiRateLimiter, ReplayStore],
})
export class AiHttpModule {}
