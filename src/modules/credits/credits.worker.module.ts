import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { QUEUES } from '../../infra/queue/queues.js';
import { CreditsModule } from './credits.module.js';
import { CreditsProcessor } from './credits.processor.js';

@Module({
  imports: [CreditsModule, BullModule.registerQueue({ name: QUEUES.credits })],
  providers: [CreditsProcessor],
})
export class CreditsWorkerModule {}
