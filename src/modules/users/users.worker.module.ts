import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { QUEUES } from '../../infra/queue/queues.js';
import { UsersModule } from './users.module.js';
import { UsersProcessor } from './users.processor.js';

@Module({
  imports: [UsersModule, BullModule.registerQueue({ name: QUEUES.users })],
  providers: [UsersProcessor],
})
export class UsersWorkerModule {}
