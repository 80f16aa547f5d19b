import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { QUEUES } from '../../infra/queue/queues.js';
import { BroadcastsModule } from './broadcasts.module.js';
import { BroadcastSweeper } from './broadcast-sweeper.js';
import { BroadcastsProcessor } from './broadcasts.processor.js';

@Module({
  imports: [BroadcastsModule, BullModule.registerQueue({ name: QUEUES.broadcasts })],
  providers: [BroadcastsProcessor, BroadcastSweeper],
})
export class BroadcastsWorkerModule {}
